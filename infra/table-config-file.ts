// How the table config reaches the functions: a `tables.json` written into each function's code at synth,
// its deploy-time values (the owned bucket's name) in small `TABLES_REF_<n>` variables beside TABLES_FILE.
//
// Why a file in the code and not the environment: Lambda allows 4 KB for all variables together, and the
// TABLES JSON alone passes that at about 20 tables. An SSM parameter is capped at 4 KB (8 KB advanced), and
// an S3 object or parameter written at deploy needs a custom resource (which the local cloud does not run)
// and a read on every cold start. The code asset has no size limit that matters here, is versioned with the
// code that parses it (a config change deploys like a code change, atomically per function), and is read
// from local disk. The functions still accept the TABLES variable (older deployments, the CLI, tests).
import { type IResolvable, Token, Tokenization } from 'aws-cdk-lib';
import { tablesRefVariable } from '../functions/shared/table-source.js';

/** Name of the table config file beside each handler (the functions read it through `TABLES_FILE`). */
export const TABLES_FILE_NAME = 'tables.json';

/** What a function needs to read the table config: its environment variables and its code file. */
export interface TableConfigDelivery {
  /** `TABLES_FILE` and one `TABLES_REF_<n>` per deploy-time value in the config. */
  readonly environment: Readonly<Record<string, string>>;
  /** `tables.json`, for `projectFunction`'s `codeFiles`. */
  readonly codeFiles: Readonly<Record<string, string>>;
}

/**
 * The delivery of `tablesJson` (the TABLES JSON, which may hold CDK tokens such as the owned bucket's
 * name): each distinct token is replaced by `${TABLES_REF_<n>}` in the file and set as that variable, which
 * CloudFormation resolves at deploy; the functions put the values back (`loadTableConfigs`).
 */
export function tableConfigDelivery(tablesJson: string): TableConfigDelivery {
  const environment: Record<string, string> = { TABLES_FILE: TABLES_FILE_NAME };
  const names = new Map<IResolvable, string>();
  const file = Tokenization.reverseString(tablesJson)
    .mapTokens({
      mapToken: (token: IResolvable) => {
        let name = names.get(token);
        if (name === undefined) {
          name = tablesRefVariable(names.size);
          names.set(token, name);
          environment[name] = Token.asString(token);
        }
        return `\${${name}}`;
      },
    })
    .join({ join: (left: unknown, right: unknown) => `${String(left)}${String(right)}` });
  return { environment, codeFiles: { [TABLES_FILE_NAME]: String(file ?? '') } };
}
