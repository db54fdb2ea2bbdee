// The AWS SDK warns on every SDK-touching command under Node < 22 (`NodeVersionSupportWarning`, 8 lines on stderr)
// that SDK versions published after January 2027 will need Node 22. The project supports Node 20 (package.json
// `engines`, the README's prerequisites), the SDK it ships with (package-lock.json) runs on it, and the Lambdas run
// Node 22: the warning tells a CLI user nothing they can act on, and drowns the one line a failure prints. The SDK's
// own switch (AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED, read by @aws-sdk/core's
// emitWarningIfUnsupportedVersion when a client is made) turns it off; set only in the CLI's process, only on a
// Node that would warn, and never over a value the user set.

/** The SDK's variable that silences its Node version warning when "true". */
export const SDK_NODE_WARNING_VARIABLE = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

/** The Node major the SDK's warning asks for; below it, it warns. */
const SDK_WARNS_BELOW_NODE_MAJOR = 22;

/**
 * Silences the SDK's Node version warning in `env` (the CLI's process.env) when `nodeVersion` (process.versions.node)
 * is one it would warn on and the user has not set the variable either way.
 */
export function quietSdkNodeWarning(env: Record<string, string | undefined>, nodeVersion: string): void {
  const major = Number.parseInt(nodeVersion.replace(/^v/, ''), 10);
  if (Number.isNaN(major) || major >= SDK_WARNS_BELOW_NODE_MAJOR) return;
  if (env[SDK_NODE_WARNING_VARIABLE] === undefined) env[SDK_NODE_WARNING_VARIABLE] = 'true';
}
