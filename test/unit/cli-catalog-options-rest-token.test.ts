// The CLI spells a REST catalog's token source and uri as the table config does, checked by the same schema: the
// secret or SSM parameter flags land in the setting, and an http:// uri off loopback is a usage error naming the flag.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../functions/core/errors.js';
import { catalogFromFlags } from '../../functions/core/formats/iceberg/cli-options.js';

const rest = { catalog: 'rest', restNamespace: 'lake', restTable: 'events', restAuth: 'oauth2' } as const;
const SECRET = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:lake/token-AbC123';

describe('catalogFromFlags (REST transport)', () => {
  it('puts --rest-token-parameter and --rest-token-secret-arn into the oauth2 auth', () => {
    // Act
    const parameter = catalogFromFlags(
      { ...rest, restUri: 'https://catalog.example.com', restTokenParameter: '/lake/token' },
      'iceberg',
    );
    const secret = catalogFromFlags(
      { ...rest, restUri: 'https://catalog.example.com', restTokenSecretArn: SECRET },
      'iceberg',
    );
    // Assess
    expect(parameter).toMatchObject({ auth: { type: 'oauth2', tokenParameter: '/lake/token' } });
    expect(secret).toMatchObject({ auth: { type: 'oauth2', tokenSecretArn: SECRET } });
  });

  it('refuses an http:// --rest-uri off loopback and a secret named without its full ARN, naming the flag', () => {
    // Act
    const http = () => catalogFromFlags({ ...rest, restUri: 'http://catalog.example.com' }, 'iceberg');
    const partial = () =>
      catalogFromFlags(
        { ...rest, restUri: 'https://catalog.example.com', restTokenSecretArn: SECRET.slice(0, -7) },
        'iceberg',
      );
    // Assess
    expect(http).toThrow(UsageError);
    expect(http).toThrow(/--rest-uri must be an https:\/\/ URL/);
    expect(partial).toThrow(/--rest-token-secret-arn must be a Secrets Manager secret's full ARN/);
  });
});
