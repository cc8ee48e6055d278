/** A mistake in the command line or in the files it names: printed without a stack, exit code 2. */
export class CliError extends Error {
  override name = "CliError";
}
