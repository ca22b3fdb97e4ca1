import { Argument, Command } from 'commander';
import { example, type CommandEnv } from '../kit/command-kit';

/** Every command path of the tree with the words that may follow it (subcommands and options). */
export function completionTable(root: Command): Array<{ path: string; words: string[] }> {
  const out: Array<{ path: string; words: string[] }> = [];
  const walk = (cmd: Command, path: string[], inherited: string[]): void => {
    const own = cmd.options.flatMap((o) => [o.long, o.short].filter((f): f is string => f !== undefined));
    const options = [...inherited, ...own, '--help'];
    out.push({ path: path.join(' '), words: [...cmd.commands.map((c) => c.name()), ...new Set(options)] });
    for (const sub of cmd.commands) walk(sub, [...path, sub.name()], path.length === 0 ? own : inherited);
  };
  walk(root, [], []);
  return out;
}

/**
 * A bash completion function generated from the command tree itself, so it cannot drift from it.
 * The path is made of the words that name subcommands; option values in between are skipped.
 */
export function bashCompletion(root: Command): string {
  const table = completionTable(root);
  const known = table.map((t) => `"${t.path}"`).join('|');
  const cases = table.map((t) => `    "${t.path}") words="${t.words.join(' ')}" ;;`).join('\n');
  return `# ttlstream completion (bash). Load with: source <(ttlstream completion bash)
_ttlstream() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" path="" next w words=""
  for w in "\${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    next="\${path:+$path }$w"
    case "$next" in
      ${known}) path="$next" ;;
    esac
  done
  case "$path" in
${cases}
  esac
  COMPREPLY=( $(compgen -W "$words" -- "$cur") )
}
complete -o default -F _ttlstream ttlstream
`;
}

export function completionCommand(env: CommandEnv): Command {
  const cmd = new Command('completion')
    .description('print a shell completion script (bash or zsh)')
    .addArgument(new Argument('<shell>', 'the shell').choices(['bash', 'zsh']))
    .action((shell: string, _opts: unknown, command: Command) => printCompletion(env, shell, command));
  return example(
    cmd,
    'source <(ttlstream completion bash)     # in ~/.bashrc',
    'source <(ttlstream completion zsh)      # in ~/.zshrc',
  );
}

/** `completion`'s action: the completion script of the whole command tree, for bash or (through bashcompinit) zsh. */
function printCompletion(env: CommandEnv, shell: string, command: Command): void {
  let root = command;
  while (root.parent) root = root.parent;
  const script = bashCompletion(root);
  // zsh runs bash completion functions through bashcompinit.
  env.io.stdout.write(
    shell === 'zsh'
      ? `# ttlstream completion (zsh). Load with: source <(ttlstream completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${script}`
      : script,
  );
}
