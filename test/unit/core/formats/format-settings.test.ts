// Format-owned settings (issue #27 item 1): every table-config, run-input and run-context field a format owns is
// declared in its folder and nowhere else; the table config, the construct's props and the run input take exactly
// the union of the registered formats' fragments, and a format of a test's own contributes its fields by being in
// the list, without touching a shared file.
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineFormatSettings } from '../../../../functions/core/formats/format-settings.js';
import {
  FORMAT_RUN_CONTEXT_FIELDS,
  FORMAT_RUN_INPUT_FIELDS,
  FORMAT_TABLE_FIELDS,
  formatSettingsIssues,
  mergeFormatFields,
  misplacedRunInputMessage,
  misplacedSettingMessage,
  TABLE_FORMATS,
} from '../../../../functions/core/formats/index.js';
import type { TableFormat } from '../../../../functions/core/formats/table-format.js';
import { runContextSchema, runInputSchema } from '../../../../functions/core/run-input.js';
import { tableConfigSchema, tableFieldSchemas } from '../../../../functions/core/table-config.js';

const FORMATS = [...TABLE_FORMATS.values()];

/** Every field of one fragment, over the registered formats, as [name, schema, owner]. */
function declared(fragment: (f: TableFormat) => z.ZodRawShape | undefined) {
  return FORMATS.flatMap((f) =>
    Object.entries(fragment(f) ?? {}).map(([name, schema]) => [name, schema, f.name]),
  );
}

/** A format of this test only, with a table setting and a run input of its own. */
function fakeFormat(): TableFormat {
  const base = TABLE_FORMATS.get('parquet') as TableFormat;
  return {
    ...base,
    name: 'fake',
    title: 'Fake',
    settings: defineFormatSettings({
      tableFields: { fakeMode: z.enum(['fast', 'slow']).optional() },
      run: {
        input: { fakeDepth: z.number().optional() },
        context: { fakeDepth: z.number().optional() },
        resolve: (_table, request) =>
          request.fakeDepth === undefined ? {} : { fakeDepth: request.fakeDepth },
      },
    }),
  };
}

describe('format-owned settings', () => {
  it('composes the table fields as exactly the union of the formats fragments, each schema the format declared', () => {
    // Prepare
    const expected = declared((f) => f.settings?.tableFields);

    // Act
    const composed = Object.entries(FORMAT_TABLE_FIELDS);

    // Assess
    expect(composed.map(([name]) => name).sort()).toEqual(expected.map(([name]) => name).sort());
    for (const [name, schema] of expected) {
      expect((FORMAT_TABLE_FIELDS as z.ZodRawShape)[name as string]).toBe(schema);
      expect((tableFieldSchemas as z.ZodRawShape)[name as string]).toBe(schema);
      expect(tableConfigSchema.shape).toHaveProperty(name as string);
    }
    expect(expected.map(([name]) => name)).toEqual(
      expect.arrayContaining(['deltaLogStore', 'catalog', 'rewriteDataFiles']),
    );
  });

  it('composes the run input and the run context as exactly the union of the formats run fragments', () => {
    // Prepare
    const input = declared((f) => f.settings?.run?.input);
    const context = declared((f) => f.settings?.run?.context);

    // Act
    const inputNames = Object.keys(FORMAT_RUN_INPUT_FIELDS).sort();
    const contextNames = Object.keys(FORMAT_RUN_CONTEXT_FIELDS).sort();

    // Assess
    expect(inputNames).toEqual(input.map(([name]) => name).sort());
    expect(contextNames).toEqual(context.map(([name]) => name).sort());
    for (const [name, schema] of input) expect(runInputSchema.shape).toHaveProperty(name as string, schema);
    for (const [name, schema] of context)
      expect(runContextSchema.shape).toHaveProperty(name as string, schema);
  });

  it('lets a format of its own contribute its table field and run input by being in the list, nothing shared edited', () => {
    // Prepare
    const formats = [...FORMATS, fakeFormat()];

    // Act
    const table = mergeFormatFields(formats, 'table');
    const input = mergeFormatFields(formats, 'runInput');
    const context = mergeFormatFields(formats, 'runContext');

    // Assess
    expect(Object.keys(table).sort()).toEqual([...Object.keys(FORMAT_TABLE_FIELDS), 'fakeMode'].sort());
    expect(Object.keys(input).sort()).toEqual([...Object.keys(FORMAT_RUN_INPUT_FIELDS), 'fakeDepth'].sort());
    expect(Object.keys(context).sort()).toEqual(
      [...Object.keys(FORMAT_RUN_CONTEXT_FIELDS), 'fakeDepth'].sort(),
    );
    expect(mergeFormatFields(FORMATS, 'table')).toEqual(FORMAT_TABLE_FIELDS);
  });

  it('refuses each format setting and run input on a table of every other format, naming its owner', () => {
    // Prepare
    const tableFields = declared((f) => f.settings?.tableFields);
    const runInputs = declared((f) => f.settings?.run?.input);

    // Act
    const refusals = tableFields.flatMap(([name, , owner]) =>
      FORMATS.map((f) => ({
        owner,
        format: f.name,
        message: misplacedSettingMessage(f.name, name as string),
      })),
    );
    const runRefusals = runInputs.flatMap(([name, , owner]) =>
      FORMATS.map((f) => ({
        owner,
        format: f.name,
        message: misplacedRunInputMessage({ name: 't', format: f.name }, name as string),
      })),
    );

    // Assess
    for (const { owner, format, message } of [...refusals, ...runRefusals]) {
      if (format === owner) expect(message).toBeUndefined();
      else expect(message).toContain(`(format "${owner}")`);
    }
  });

  it("leaves a format's own required settings to the format: a Delta table without deltaLogStore is refused by Delta's rule", () => {
    // Prepare
    const table = { format: 'delta' };

    // Act
    const issues = formatSettingsIssues(table);

    // Assess
    expect(issues.map((i) => i.path)).toEqual(['deltaLogStore']);
    expect(formatSettingsIssues({ format: 'parquet' })).toEqual([]);
  });
});
