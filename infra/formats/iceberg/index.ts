// What Iceberg tables (`format: "iceberg"`) need from the construct, beyond the shared grants: the profiler and
// the validate step follow the catalog's pointer and read the metadata it points at; the functions that commit,
// settle or vacuum go through the table's catalog (Glue, S3 Tables or a REST catalog's token: its statements in
// ./catalog-access.ts); the vacuum writes the metadata file its expire_snapshots commits.
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { kmsViaS3Statement, s3EncryptionContexts } from '../../kms-access.js';
import { listStatements, normalizeTablePrefix, type TableLocation } from '../../s3-access.js';
import { COMMITTING_FUNCTIONS, type FormatInfra, present } from '../format-infra.js';
import type { IcebergTableProps } from './props.js';

export type { IcebergTableProps } from './props.js';

import {
  icebergCatalogStatements,
  icebergMetadataWriteStatement,
  s3TablesCatalogProblems,
} from './catalog-access.js';

/**
 * Reads of Iceberg tables' current metadata, manifest lists and manifests under `metadata/` (GetObject on it,
 * ListBucket for the path catalog's listing, decrypt with the tables' keys): a new metadata file is only a nudge,
 * so the profiler reads what the pointer names. Data files stay out of reach: manifests give their sizes. None
 * when there is no Iceberg table.
 */
function metadataReadStatements(
  icebergTables: readonly TableLocation[],
  keys: readonly kms.IKey[],
): iam.PolicyStatement[] {
  if (icebergTables.length === 0) return [];
  const metadata = [
    ...new Set(
      icebergTables.map((t) => `arn:aws:s3:::${t.bucketName}/${normalizeTablePrefix(t.prefix)}metadata/*`),
    ),
  ];
  return present(
    new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: metadata }),
    ...listStatements(icebergTables),
    kmsViaS3Statement(keys, ['kms:Decrypt'], s3EncryptionContexts(icebergTables, metadata)),
  );
}

/** Iceberg's contribution to the construct. */
export const icebergInfra: FormatInfra<Record<never, never>, IcebergTableProps> = {
  format: 'iceberg',
  grants(context) {
    const { scope, tables } = context;
    const icebergTables = tables.filter((t) => t.format === 'iceberg');
    const keys = context.keysOf(icebergTables);
    return [
      // The profiler reads the pointer through the table's catalog (read-only grants) and the metadata it names.
      {
        stage: 'profiler',
        to: ['profiler'],
        statements: [
          ...metadataReadStatements(icebergTables, keys),
          ...icebergCatalogStatements(scope, tables, 'read'),
        ],
      },
      // Read and committed through a Glue or REST catalog by the steps that plan, commit or settle a group, by the
      // sweep, which settles a dead run's groups, and by the vacuum, whose expire_snapshots swaps the catalog's
      // pointer and whose orphan removal reads through it.
      { stage: 'catalog', to: COMMITTING_FUNCTIONS, statements: icebergCatalogStatements(scope, tables) },
      // The validate step lists the partitions a request's `where` selects (no partition named): it reads the
      // current snapshot's metadata through the table's catalog, as the profiler does, and nothing else.
      {
        stage: 'catalog',
        to: ['validate'],
        statements: [
          ...metadataReadStatements(icebergTables, keys),
          ...icebergCatalogStatements(scope, tables, 'read'),
        ],
      },
      { stage: 'log', to: ['vacuum'], statements: present(icebergMetadataWriteStatement(tables)) },
    ];
  },
  wildcardGrants: [
    {
      actions: /^s3tables:[A-Za-z]+$/,
      resource: /^arn:aws[a-z-]*:s3tables:[a-z0-9-]+:\d{12}:bucket\/[a-z0-9-]+\/table\/\*$/,
      reason:
        "One S3 Tables table, named by the statement's s3tables:namespace and s3tables:tableName conditions: a table ARN ends with the table's id, which is unknown at synth and changes when the table is re-created.",
    },
  ],
  // An S3 Tables catalog's grants name its table bucket: without a valid `warehouse` there is nothing to grant on.
  propsProblems: s3TablesCatalogProblems,
};
