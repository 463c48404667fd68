/**
 * The `gatehouse` command line. Each command lives in `cli/commands/<name>.ts` and exports
 * `run(args: string[]): Promise<number>` (the exit code) and a one-line `summary`.
 */
const COMMANDS: Record<string, () => Promise<{ run(args: string[]): Promise<number>; summary: string }>> = {
  policies: () => import('./commands/policies.ts'),
  serve: () => import('./commands/serve.ts'),
  keys: () => import('./commands/keys.ts'),
  audit: () => import('./commands/audit.ts'),
  memory: () => import('./commands/memory.ts'),
  sessions: () => import('./commands/sessions.ts'),
};

function usage(): string {
  return ['usage: gatehouse <command> [options]', '', 'commands:', ...Object.keys(COMMANDS).map((c) => `  ${c}`)].join('\n');
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    console.log(usage());
    return name ? 0 : 2;
  }
  const load = COMMANDS[name];
  if (!load) {
    console.error(`gatehouse: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  const command = await load();
  quietOnClosedPipe(name);
  return command.run(rest);
}

/**
 * A reader that stops early (`gatehouse audit export | head`) closes the pipe under us: its
 * choice, not our failure. A command then stops at once with 0, as any writer in a shell pipeline
 * does on SIGPIPE, instead of dying of EPIPE with a stack trace; the server keeps serving, its
 * log unread.
 */
function quietOnClosedPipe(command: string): void {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (command === 'serve') return;
    if (error.code === 'EPIPE') process.exit(0);
    throw error;
  });
}

process.exitCode = await main(process.argv.slice(2));
