// Unit tests of the where partition filter: the language's operators select partitions by their values as SQL
// would (nulls and missing fields fail comparisons), bad input is refused with the position and what was
// expected, a field no partition has is named with the nearest one, and values are only ever data.
import { describe, expect, it } from 'vitest';
import {
  checkWhereFields,
  InvalidWhereError,
  matchesWhere,
  parseWhere,
  whereFields,
} from '../../../../../functions/core/formats/iceberg/where.js';
import type { PartitionValue } from '../../../../../functions/core/partition.js';

const PARTITIONS: Record<string, PartitionValue[]> = {
  view08: [
    { name: 'event_time_hour', value: '2020-01-01-08' },
    { name: 'action', value: 'view' },
  ],
  click09: [
    { name: 'event_time_hour', value: '2020-01-01-09' },
    { name: 'action', value: 'click' },
  ],
  download10: [
    { name: 'event_time_hour', value: '2020-01-01-10' },
    { name: 'action', value: 'download' },
  ],
  nullAction: [
    { name: 'event_time_hour', value: '2020-01-01-11' },
    { name: 'action', value: null },
  ],
};

function selected(where: string): string[] {
  const expr = parseWhere(where);
  return Object.entries(PARTITIONS)
    .filter(([, values]) => matchesWhere(expr, values))
    .map(([name]) => name);
}

function reasonOf(act: () => unknown): string {
  try {
    act();
  } catch (err) {
    if (err instanceof InvalidWhereError) return err.reason;
    throw err;
  }
  throw new Error('expected InvalidWhereError, nothing was thrown');
}

describe('matchesWhere', () => {
  it('selects partitions by each comparison operator, text ordered by code unit', () => {
    // Prepare
    const filters = {
      eq: "action = 'click'",
      ne: "action != 'click'",
      neAlt: "action <> 'click'",
      lt: "event_time_hour < '2020-01-01-09'",
      le: "event_time_hour <= '2020-01-01-09'",
      gt: "event_time_hour > '2020-01-01-09'",
      ge: "event_time_hour >= '2020-01-01-09'",
    };

    // Act
    const result = Object.fromEntries(Object.entries(filters).map(([k, w]) => [k, selected(w)]));

    // Assess: a null action fails = and != alike, as in SQL
    expect(result).toEqual({
      eq: ['click09'],
      ne: ['view08', 'download10'],
      neAlt: ['view08', 'download10'],
      lt: ['view08'],
      le: ['view08', 'click09'],
      gt: ['download10', 'nullAction'],
      ge: ['click09', 'download10', 'nullAction'],
    });
  });

  it('selects by IN, NOT IN, IS NULL and IS NOT NULL', () => {
    // Act
    const inList = selected("action IN ('click', 'view')");
    const notIn = selected("action NOT IN ('click', 'view')");
    const isNull = selected('action IS NULL');
    const notNull = selected('action is not null');

    // Assess
    expect(inList).toEqual(['view08', 'click09']);
    expect(notIn).toEqual(['download10']);
    expect(isNull).toEqual(['nullAction']);
    expect(notNull).toEqual(['view08', 'click09', 'download10']);
  });

  it('binds AND tighter than OR, and honours parentheses and NOT', () => {
    // Act
    const precedence = selected("action = 'view' OR action = 'click' AND event_time_hour > '2020-01-01-09'");
    const grouped = selected("(action = 'view' OR action = 'click') AND event_time_hour > '2020-01-01-08'");
    const negated = selected("NOT (action = 'view' OR action IS NULL)");

    // Assess
    expect(precedence).toEqual(['view08']);
    expect(grouped).toEqual(['click09']);
    expect(negated).toEqual(['click09', 'download10']);
  });

  it('compares numbers numerically with numeric values, and a field the partition lacks as null', () => {
    // Prepare
    const buckets = ['2', '10', '-3'].map((v) => [{ name: 'id_bucket', value: v }]);

    // Act
    const numeric = buckets.map((values) => matchesWhere(parseWhere('id_bucket >= 2'), values));
    const asText = buckets.map((values) => matchesWhere(parseWhere("id_bucket >= '2'"), values));
    const missing = matchesWhere(parseWhere("region = 'eu'"), PARTITIONS.view08 ?? []);
    const missingIsNull = matchesWhere(parseWhere('region IS NULL'), PARTITIONS.view08 ?? []);

    // Assess
    expect(numeric).toEqual([true, true, false]);
    expect(asText).toEqual([true, false, false]);
    expect(missing).toBe(false);
    expect(missingIsNull).toBe(true);
  });

  it('reads quoted field names and quotes doubled inside text, and treats code-like text as a value only', () => {
    // Prepare
    const odd = [
      { name: 'event type', value: "it's" },
      { name: 'action', value: 'process.exit(1)' },
    ];

    // Act
    const quoted = matchesWhere(parseWhere("`event type` = 'it''s'"), odd);
    const doubleQuoted = matchesWhere(parseWhere(`"event type" = 'it''s'`), odd);
    const codeLike = matchesWhere(parseWhere("action = 'process.exit(1)'"), odd);

    // Assess
    expect([quoted, doubleQuoted, codeLike]).toEqual([true, true, true]);
    expect(whereFields(parseWhere("`event type` = 'x' OR action IN ('a') AND action IS NULL"))).toEqual([
      'action',
      'event type',
    ]);
  });
});

describe('parseWhere refuses bad input with where and what was expected', () => {
  it('names the position and the expectation for each kind of mistake', () => {
    // Act
    const reasons = [
      '',
      "action = 'click",
      'action =',
      "action == 'click'",
      "action = 'click' AND",
      "action = 'click' region = 'eu'",
      "action IN 'click'",
      "action IN ('click' 'view')",
      "AND = 'x'",
      "action NOT = 'x'",
      "action = 'x' ; drop",
      "(action = 'x'",
      'action = click',
    ].map((w) => reasonOf(() => parseWhere(w)));

    // Assess
    expect(reasons).toEqual([
      'it is empty',
      'the text starting at position 10 has no closing quote',
      "expected a value ('text' or a number), found the end",
      'expected a value (\'text\' or a number), found "=" at position 9',
      'expected a partition field name, found the end',
      'expected AND, OR or the end, found "region" at position 18',
      'expected "(" after IN, found "click" at position 11',
      'expected "," or ")", found "view" at position 20',
      'expected a partition field name, found "AND" at position 1',
      'expected IN after NOT, found "=" at position 12',
      'unexpected ";" at position 14',
      'expected ")", found the end',
      'expected a value (\'text\' or a number), found "click" at position 10',
    ]);
  });

  it('says the whole filter, the reason and an example in its message', () => {
    // Act
    const message = (() => {
      try {
        parseWhere('action =');
      } catch (err) {
        return (err as Error).message;
      }
      return '';
    })();

    // Assess
    expect(message).toBe(
      `The where filter "action =" is invalid: expected a value ('text' or a number), found the end. Nothing was changed; write e.g. action = 'click' AND event_time_hour >= '2020-01-01-09' (partition fields; =, !=, <, <=, >, >=, IN (…), IS NULL, AND, OR, NOT, parentheses)`,
    );
  });
});

describe('checkWhereFields', () => {
  it('refuses a field no partition has, suggesting the nearest, and accepts known ones', () => {
    // Prepare
    const known = ['event_time_hour', 'action'];

    // Act
    const typo = reasonOf(() => checkWhereFields('x', parseWhere("actoin = 'click'"), known));
    const unrelated = reasonOf(() => checkWhereFields('x', parseWhere("region = 'eu'"), known));
    const unpartitioned = reasonOf(() => checkWhereFields('x', parseWhere("region = 'eu'"), []));

    // Assess
    expect(typo).toBe(
      'no partition has a field "actoin" (did you mean "action"?); its partition fields are event_time_hour, action',
    );
    expect(unrelated).toBe(
      'no partition has a field "region"; its partition fields are event_time_hour, action',
    );
    expect(unpartitioned).toBe('no partition has a field "region"; the table is unpartitioned');
    expect(() => checkWhereFields('x', parseWhere("action = 'click'"), known)).not.toThrow();
  });
});
