// Checks EventBridge rule schedule expressions at synth, by the rules EventBridge applies when the rule is
// created: `rate(<n> <unit>)` and six-field `cron(...)`; anything else is refused with the fix spelled out.
//
// Grammar (docs: "Schedule expressions for rules" in the EventBridge user guide):
// - rate(value unit): value a positive whole number; unit minute|hour|day, singular for 1, plural above.
// - cron(minutes hours day-of-month month day-of-week year): minutes 0-59, hours 0-23, day-of-month 1-31,
//   month 1-12 or JAN-DEC, day-of-week 1-7 or SUN-SAT, year 1970-2199. Every field takes `*`, a value, a
//   range `a-b`, a list `a,b` and an increment `x/n` (x one of `*`, a value or a range); day-of-month also
//   takes `L`, `LW` and `<day>W`; day-of-week `L`, `<day>L` and `<day>#<1-5>`. Exactly one of day-of-month
//   and day-of-week is `?` (EventBridge cannot combine them).

interface Field {
  readonly name: string;
  readonly min: number;
  readonly max: number;
  readonly names?: readonly string[];
}

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const FIELDS: readonly Field[] = [
  { name: 'minutes', min: 0, max: 59 },
  { name: 'hours', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS },
  { name: 'day-of-week', min: 1, max: 7, names: DAYS },
  { name: 'year', min: 1970, max: 2199 },
];

const EXAMPLES = 'e.g. rate(15 minutes), rate(1 day) or cron(0 4 * * ? *)';

/** Why EventBridge would refuse `expression` as a rule's schedule, with the fix; undefined when it is valid. */
export function scheduleExpressionProblem(expression: string): string | undefined {
  const text = expression.trim();
  const rate = /^rate\((.*)\)$/s.exec(text);
  if (rate) return rateProblem(rate[1] ?? '');
  const cron = /^cron\((.*)\)$/s.exec(text);
  if (cron) return cronProblem(cron[1] ?? '');
  return `${JSON.stringify(expression)} is neither rate(<value> <unit>) nor cron(<6 fields>), the two schedules a rule takes; ${EXAMPLES}`;
}

function rateProblem(body: string): string | undefined {
  const match = /^\s*(\S+)\s+(\S+)\s*$/.exec(body);
  const shown = `rate(${body})`;
  if (!match) return `${shown} must be rate(<value> <unit>), ${EXAMPLES}`;
  const [, value = '', unit = ''] = match;
  if (!/^\d+$/.test(value) || Number(value) < 1) {
    return `${shown} needs a positive whole number of ${unit}, e.g. rate(5 minutes)`;
  }
  const singular = unit.replace(/s$/, '');
  if (!['minute', 'hour', 'day'].includes(singular)) {
    return `${shown} has the unit "${unit}"; use minute(s), hour(s) or day(s) (a week is rate(7 days))`;
  }
  const wanted = Number(value) === 1 ? singular : `${singular}s`;
  if (unit !== wanted) {
    return `${shown} must say "${wanted}" (singular for 1, plural above): rate(${Number(value)} ${wanted})`;
  }
  return undefined;
}

function cronProblem(body: string): string | undefined {
  const shown = `cron(${body})`;
  const parts = body
    .trim()
    .split(/\s+/)
    .filter((p) => p !== '');
  if (parts.length !== 6) {
    return `${shown} has ${parts.length} field${parts.length === 1 ? '' : 's'}; EventBridge cron has 6 (minutes hours day-of-month month day-of-week year), e.g. cron(0 4 * * ? *)`;
  }
  const problems = FIELDS.flatMap((field, i) => {
    const problem = fieldProblem(field, parts[i] ?? '');
    return problem === undefined ? [] : [`${field.name} "${parts[i]}": ${problem}`];
  });
  const [, , dayOfMonth, , dayOfWeek] = parts;
  if ((dayOfMonth === '?') === (dayOfWeek === '?')) {
    problems.push(
      dayOfMonth === '?'
        ? 'day-of-month and day-of-week are both "?"; give one of them, e.g. cron(0 4 * * ? *) for every day'
        : 'one of day-of-month and day-of-week must be "?" (EventBridge cannot combine them), e.g. cron(0 4 * * ? *) for every day or cron(0 4 ? * MON *) for Mondays',
    );
  }
  return problems.length === 0
    ? undefined
    : `${shown} is not a valid EventBridge cron: ${problems.join('; ')}`;
}

function fieldProblem(field: Field, text: string): string | undefined {
  if (text === '?') {
    return field.name === 'day-of-month' || field.name === 'day-of-week'
      ? undefined
      : '"?" is only for day-of-month or day-of-week';
  }
  if (field.name === 'day-of-month' && /^(L|LW|\d{1,2}W)$/i.test(text)) {
    const day = /^(\d+)W$/i.exec(text)?.[1];
    return day === undefined || inRange(Number(day), field) ? undefined : `${day} is not a day of the month`;
  }
  if (field.name === 'day-of-week') {
    if (/^L$/i.test(text)) return undefined;
    const last = /^(.+)L$/i.exec(text);
    if (last) return valueProblem(field, last[1] ?? '');
    const nth = /^(.+)#(\d+)$/.exec(text);
    if (nth) {
      const n = Number(nth[2]);
      return (
        valueProblem(field, nth[1] ?? '') ?? (n >= 1 && n <= 5 ? undefined : `#${n}: a month has weeks 1-5`)
      );
    }
  }
  for (const item of text.split(',')) {
    const problem = itemProblem(field, item);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function itemProblem(field: Field, item: string): string | undefined {
  const [base = '', step, ...rest] = item.split('/');
  if (rest.length > 0) return `"${item}" has more than one "/"`;
  if (step !== undefined && (!/^\d+$/.test(step) || Number(step) < 1)) {
    return `the increment in "${item}" must be a positive whole number`;
  }
  if (base === '*') return undefined;
  const range = base.split('-');
  if (range.length > 2) return `"${base}" is not a value or a range a-b`;
  for (const value of range) {
    const problem = valueProblem(field, value);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function valueProblem(field: Field, value: string): string | undefined {
  if (/^\d+$/.test(value)) {
    return inRange(Number(value), field) ? undefined : `${value} is outside ${field.min}-${field.max}`;
  }
  if (field.names?.includes(value.toUpperCase())) return undefined;
  const allowed = field.names === undefined ? '' : ` or ${field.names[0]}-${field.names.at(-1)}`;
  return `"${value}" is not a value of ${field.name} (${field.min}-${field.max}${allowed})`;
}

function inRange(value: number, field: Field): boolean {
  return value >= field.min && value <= field.max;
}
