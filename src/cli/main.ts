// Tessera's command line for operators (npx tessera …). It speaks the public GraphQL API only.
//
//   tessera load   --campaign <id> --file <codes.csv|->   load codes in batches, with a progress bar (load.ts)
//   tessera export --campaign <id> [--out <file.csv>]     the campaign's allocations as CSV (export.ts)
//   tessera verify [--campaign <id>] [--repair]           every counter against the rows (verify.ts)
//   tessera verify-ballot --campaign <id> | --file <f>    recompute a drawn ballot (verifyBallot.ts)
//
// Promises kept here (test/cli.test.ts checks each): every failure ends the process with one line
// "tessera: …" on stderr and a non-zero status (1 failed, 2 wrong usage, 130/143 interrupted); no
// timer, socket or stream outlives a failure; every HTTP request has a deadline (--timeout); an
// export writes nothing until its first page has arrived, and a file only appears, whole, at the
// end; the load bar counts codes the server has acknowledged; exported cells cannot run as
// spreadsheet formulas (csv.ts).
//
// commander parses the arguments and writes the help; its errors are turned into the CLI's own
// one-line messages here, where the command they concern is known.
import { Command, CommanderError } from 'commander';
import { CliError, EXIT, usage } from './errors';
import { exportCommand } from './export';
import { handleSignals } from './interrupt';
import { loadCommand } from './load';
import { verifyCommand } from './verify';
import { verifyBallotCommand } from './verifyBallot';

/** Runs the CLI on `argv` (the arguments after the script) and sets process.exitCode. */
export async function run(argv: string[]): Promise<void> {
  const stopListening = handleSignals();
  try {
    await main(argv);
  } catch (error) {
    if (error instanceof CliError) {
      if (error.message) process.stderr.write(`tessera: ${error.message}\n`);
      process.exitCode = error.exitCode;
    } else {
      process.stderr.write(`tessera: unexpected error: ${(error as Error)?.stack ?? error}\n`);
      process.exitCode = EXIT.FAILED;
    }
  } finally {
    stopListening();
  }
}

async function main(argv: string[]): Promise<void> {
  const tessera = program();
  if (argv.length === 0) {
    tessera.outputHelp({ error: true });
    process.exitCode = EXIT.USAGE;
    return;
  }
  // A command's --help anywhere before "--" shows its help, whatever else is on the line.
  const command = tessera.commands.find((c) => c.name() === argv[0]);
  const beforeDashes = argv.indexOf('--') === -1 ? argv : argv.slice(0, argv.indexOf('--'));
  if (command && (beforeDashes.includes('--help') || beforeDashes.includes('-h'))) {
    command.outputHelp();
    return;
  }
  if (command) missingValue(command, beforeDashes.slice(1));
  await tessera.parseAsync(argv, { from: 'user' });
}

function program(): Command {
  const tessera = new Command('tessera')
    .usage('<command> [options]')
    .helpOption('-h, --help', 'this help')
    .helpCommand(false)
    .addCommand(loadCommand())
    .addCommand(exportCommand())
    .addCommand(verifyCommand())
    .addCommand(verifyBallotCommand())
    .addHelpText(
      'after',
      '\n"tessera <command> --help" shows a command\'s options; --url, --key and --timeout go with every command.\n' +
        'Exit status: 0 done, 1 failed, 2 wrong usage, 130 or 143 interrupted (SIGINT, SIGTERM).',
    );
  tessera.addCommand(
    new Command('help')
      .summary("this help, or a command's: tessera help load")
      .argument('[command]')
      .action((topic: string | undefined) => {
        const command = topic === undefined ? tessera : tessera.commands.find((c) => c.name() === topic);
        if (!command) throw usage(`unknown command: ${topic}`);
        command.outputHelp();
      }),
  );
  for (const command of [tessera, ...tessera.commands]) {
    command.configureOutput({ outputError: () => undefined }).exitOverride((error) => {
      throw fromCommander(error, command);
    });
  }
  return tessera;
}

/** commander's error as the CLI's own message; a help it has printed is a success. */
function fromCommander(error: CommanderError, command: Command): CliError {
  if (error.exitCode === 0) return new CliError('', EXIT.OK);
  const quoted = /'([^']+)'/.exec(error.message)?.[1] ?? error.message;
  const name = command.parent ? command.name() : undefined;
  switch (error.code) {
    case 'commander.unknownOption':
      if (!name) {
        return new CliError(`unknown option: ${quoted} (the command comes first: tessera load|export|verify|verify-ballot [options]; see tessera --help)`, EXIT.USAGE);
      }
      return usage(`unknown option: ${quoted}`, name);
    case 'commander.unknownCommand':
      return usage(`unknown command: ${quoted}`);
    case 'commander.excessArguments':
      return usage(`unexpected argument: ${command.args[command.registeredArguments.length]}`, name);
    case 'commander.optionMissingArgument':
      return usage(`${quoted.split(' ')[0]} needs a value`, name);
    default:
      return usage(error.message.replace(/^error: /, ''), name);
  }
}

/**
 * "--key" at the end, or followed by another option ("--key --url x"): commander would take the
 * next argument as the key; say which option lacks its value instead. A value that starts with "-"
 * is written --key=-value.
 */
function missingValue(command: Command, args: string[]): void {
  for (let i = 0; i < args.length; i += 1) {
    const option = command.options.find((o) => o.long === args[i] || o.short === args[i]);
    if (!option?.required) continue;
    const next = args[i + 1];
    if (next === undefined || (next.length > 1 && next.startsWith('-'))) throw usage(`${args[i]} needs a value`, command.name());
    i += 1;
  }
}
