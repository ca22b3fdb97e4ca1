#!/usr/bin/env bash
# Makes a private CA and the certificates of the local stack's TLS listeners, with openssl, into DIR (default
# tls/ in the lane's data dir under infra/run, never committed). Files already there are kept. Also used by the unit tests.
#
#   ca.pem ca.key            the stack's private CA (what kafka.ssl.caFile names)
#   server.pem server.key    the broker (SAN: localhost, 127.0.0.1), signed by the CA
#   broker-keystore.pem      server.key + server.pem + ca.pem, the broker's PEM keystore
#   client.pem client.key    a client certificate (CN=ttlstream-client) for mutual TLS, signed by the CA
#   client-encrypted.key     client.key encrypted with the passphrase "client-pass"
#   other-ca.pem             a CA that signed nothing here (a "not trusted" case)
set -euo pipefail
DIR="${1:?usage: certs.sh DIR}"
mkdir -p "$DIR"
cd "$DIR"
[[ -s client-encrypted.key && -s other-ca.pem && -s broker-keystore.pem ]] && exit 0
DAYS=3650
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
key ca.key
openssl req -x509 -new -key ca.key -sha256 -days "$DAYS" -subj "/CN=ttlstream local stack CA" -out ca.pem
key other-ca.key
openssl req -x509 -new -key other-ca.key -sha256 -days "$DAYS" -subj "/CN=some other CA" -out other-ca.pem
sign() { # name subject extensions
  key "$1.key"
  openssl req -new -key "$1.key" -subj "$2" -out "$1.csr"
  printf '%s\n' "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 -days "$DAYS" \
    -extfile "$1.ext" -out "$1.pem" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
sign server "/CN=localhost" "subjectAltName=DNS:localhost,IP:127.0.0.1
extendedKeyUsage=serverAuth"
sign client "/CN=ttlstream-client" "extendedKeyUsage=clientAuth"
openssl pkcs8 -topk8 -in client.key -passout pass:client-pass -out client-encrypted.key
# Kafka's PEM keystore: an unencrypted PKCS#8 key, then the chain.
openssl pkcs8 -topk8 -nocrypt -in server.key -out server-pkcs8.key
cat server-pkcs8.key server.pem ca.pem >broker-keystore.pem
rm -f server-pkcs8.key ca.srl
chmod 600 ./*.key broker-keystore.pem
