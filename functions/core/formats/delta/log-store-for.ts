// The log store a Delta table's declared coordination makes, and the refusal of a writer that does not coordinate
// so. Its own module (not format.ts) because the format, its commit, VACUUM and its maintenance all build log
// stores this way, and format.ts registers the maintenance: kept here, none of them imports another in a cycle.
import type { ObjectStore } from '../../../ports/object-store.js';
import { CoordinationMismatchError } from '../../errors.js';
import {
  type DeltaFormatServices,
  type DeltaLogStoreSetting,
  dynamoDbCoordinationUnavailable,
  undeclaredCoordination,
} from './coordination.js';
import { ConditionalPutLogStore, type DeltaLogStore, QuietWindowLogStore } from './log-store.js';

/**
 * The log store a table's declared coordination makes, for a store: put-if-absent (checked against a DynamoDB
 * commit table when `checkDynamoDbTable` names one), Spark's DynamoDB protocol, or put-if-absent inside quiet
 * windows. Also what Delta VACUUM finishes entries and checks the coordination with.
 * @throws InvalidInputError when the table declares none, or needs DynamoDB access `services` lacks.
 */
export function deltaLogStoreFor(
  setting: DeltaLogStoreSetting | undefined,
  services: DeltaFormatServices,
): (store: ObjectStore) => DeltaLogStore {
  if (setting === undefined) throw undeclaredCoordination();
  switch (setting.type) {
    case 's3-conditional': {
      const check = setting.checkDynamoDbTable;
      if (check === undefined) return (store) => new ConditionalPutLogStore(store);
      const probe = services.deltaCommitEntries;
      if (probe === undefined) throw dynamoDbCoordinationUnavailable(check);
      return (store) => new ConditionalPutLogStore(store, probe(check, store));
    }
    case 'dynamodb': {
      const build = services.deltaLogStore;
      if (build === undefined) throw dynamoDbCoordinationUnavailable(setting);
      return (store) => build(setting, store);
    }
    case 'quiet-window':
      return (store) => new QuietWindowLogStore(store, setting);
  }
}

/** The refusal of a table whose log shows a writer that does not coordinate as declared. */
export function coordinationMismatch(
  tableRoot: string,
  logStore: DeltaLogStore,
  message: string,
): CoordinationMismatchError {
  return new CoordinationMismatchError(
    tableRoot,
    `Delta table ${tableRoot || '(store root)'} is declared to coordinate its commits through ${logStore.description}, but ${message}. Nothing was changed.`,
  );
}
