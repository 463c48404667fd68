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
  return command.run(rest);
}

process.exitCode = await main(process.argv.slice(2));
