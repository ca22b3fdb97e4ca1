"""moto's S3 server with its state kept on disk.

moto holds everything in memory, so a plain restart would empty every bucket, and the local
stack promises that `infra/ctl.sh restart s3` keeps data (as real S3 would). This wrapper runs
the same WSGI app as `moto_server` and pickles the S3 backends to a file:

- on SIGTERM/SIGINT (every graceful stop: ctl.sh stop|restart, down.sh), and
- in the background, within SNAPSHOT_INTERVAL_S after any mutating request.

A SIGKILL therefore loses at most the writes of the last interval: unlike real S3. Fault tests
that need S3 to survive a crash with every acknowledged write must use a graceful restart.

Usage: s3_server.py --host H --port P --state FILE
"""

import argparse
import os
import pickle
import signal
import sys
import threading
import time

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)
from moto.s3.models import s3_backends

SNAPSHOT_INTERVAL_S = 1.0
MUTATING = {"PUT", "POST", "DELETE", "PATCH"}


class StateLock:
    """Many requests at once, or one snapshot alone: a snapshot must not see a half-applied write."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False

    def acquire_shared(self) -> None:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._readers += 1

    def release_shared(self) -> None:
        with self._cond:
            self._readers -= 1
            self._cond.notify_all()

    def acquire_exclusive(self) -> None:
        with self._cond:
            while self._writer:
                self._cond.wait()
            self._writer = True
            while self._readers > 0:
                self._cond.wait()

    def release_exclusive(self) -> None:
        with self._cond:
            self._writer = False
            self._cond.notify_all()


class PersistentS3:
    def __init__(self, state_file: str) -> None:
        self.state_file = state_file
        self.lock = StateLock()
        self.dirty = threading.Event()
        self.app = DomainDispatcherApplication(create_backend_app)

    def load(self) -> None:
        if not os.path.exists(self.state_file):
            return
        with open(self.state_file, "rb") as f:
            state = pickle.load(f)
        for account_id, backends in state["backends"].items():
            per_account = s3_backends[account_id]
            for partition, backend in backends.items():
                dict.__setitem__(per_account, partition, backend)
        s3_backends.bucket_accounts.update(state["bucket_accounts"])
        buckets = sum(len(b.buckets) for bs in state["backends"].values() for b in bs.values())
        print(f"s3_server: restored {buckets} bucket(s) from {self.state_file}", flush=True)

    def save(self) -> None:
        self.lock.acquire_exclusive()
        try:
            self.dirty.clear()
            state = {
                "backends": {account: dict(per_account) for account, per_account in s3_backends.items()},
                "bucket_accounts": dict(s3_backends.bucket_accounts),
            }
            tmp = self.state_file + ".tmp"
            with open(tmp, "wb") as f:
                pickle.dump(state, f, protocol=pickle.HIGHEST_PROTOCOL)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.state_file)
        finally:
            self.lock.release_exclusive()

    def __call__(self, environ, start_response):  # type: ignore[no-untyped-def]
        mutating = environ.get("REQUEST_METHOD") in MUTATING and not environ.get("PATH_INFO", "").startswith("/moto-api")
        self.lock.acquire_shared()
        try:
            # moto builds the whole response before returning, so the state change is complete here.
            result = self.app(environ, start_response)
        finally:
            self.lock.release_shared()
            if mutating:
                self.dirty.set()
        return result

    def snapshot_loop(self) -> None:
        while True:
            self.dirty.wait()
            time.sleep(SNAPSHOT_INTERVAL_S)
            try:
                self.save()
            except Exception as err:  # keep serving; the next change retries
                print(f"s3_server: snapshot failed: {err!r}", file=sys.stderr, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state", required=True)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))

    server = PersistentS3(args.state)
    server.load()

    def stop(signum, frame):  # type: ignore[no-untyped-def]
        server.save()
        print(f"s3_server: state saved to {args.state}; exiting on signal {signum}", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    threading.Thread(target=server.snapshot_loop, daemon=True).start()
    run_simple(args.host, args.port, server, threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
