// The schedule expressions synth accepts are exactly the ones EventBridge accepts for a rule: rate with a
// positive whole value and a unit in the right number, and six-field cron with one of its day fields `?`.
import { Duration } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import { describe, expect, it } from 'vitest';
import { scheduleExpressionProblem } from '../../infra/schedule-expression.js';

describe('scheduleExpressionProblem', () => {
  it('accepts the documented EventBridge examples and what events.Schedule builds', () => {
    // Prepare
    const expressions = [
      'rate(1 minute)',
      'rate(5 minutes)',
      'rate(1 hour)',
      'rate(12 hours)',
      'rate(1 day)',
      'rate(7 days)',
      'cron(0 10 * * ? *)',
      'cron(15 12 * * ? *)',
      'cron(0 18 ? * MON-FRI *)',
      'cron(0 8 1 * ? *)',
      'cron(0/15 * * * ? *)',
      'cron(0/10 * ? * MON-FRI *)',
      'cron(0/5 8-17 ? * MON-FRI *)',
      'cron(0 9 ? * 2#1 *)',
      'cron(15 10 ? * 6L 2019-2022)',
      'cron(5,35 14 * * ? *)',
      'cron(0 10 L * ? *)',
      'cron(0 10 15W * ? *)',
      events.Schedule.rate(Duration.minutes(15)).expressionString,
      events.Schedule.rate(Duration.days(1)).expressionString,
      events.Schedule.cron({ hour: '4', minute: '0' }).expressionString,
      events.Schedule.cron({ weekDay: 'SUN', hour: '3', minute: '0' }).expressionString,
    ];
    // Act
    const problems = expressions.map((e) => [e, scheduleExpressionProblem(e)]);
    // Assess
    expect(problems.filter(([, problem]) => problem !== undefined)).toEqual([]);
  });

  it('refuses a rate whose unit has the wrong number, an unknown unit, or a value that is not positive', () => {
    // Prepare / Act / Assess
    expect(scheduleExpressionProblem('rate(1 minutes)')).toMatch(/must say "minute".*rate\(1 minute\)/);
    expect(scheduleExpressionProblem('rate(5 hour)')).toMatch(/must say "hours".*rate\(5 hours\)/);
    expect(scheduleExpressionProblem('rate(2 weeks)')).toMatch(/use minute\(s\), hour\(s\) or day\(s\)/);
    expect(scheduleExpressionProblem('rate(0 minutes)')).toMatch(/positive whole number/);
    expect(scheduleExpressionProblem('rate(1.5 hours)')).toMatch(/positive whole number/);
    expect(scheduleExpressionProblem('rate(15minutes)')).toMatch(/must be rate\(<value> <unit>\)/);
  });

  it('refuses a cron without 6 fields, with both or neither day field "?", or with a value out of range', () => {
    // Prepare / Act / Assess
    expect(scheduleExpressionProblem('cron(0 4 * * ?)')).toMatch(/has 5 fields; EventBridge cron has 6/);
    expect(scheduleExpressionProblem('cron(0 4 * * * *)')).toMatch(
      /one of day-of-month and day-of-week must be "\?"/,
    );
    expect(scheduleExpressionProblem('cron(0 4 ? * ? *)')).toMatch(/both "\?"/);
    expect(scheduleExpressionProblem('cron(0 24 * * ? *)')).toMatch(/hours "24": 24 is outside 0-23/);
    expect(scheduleExpressionProblem('cron(60 4 * * ? *)')).toMatch(/minutes "60"/);
    expect(scheduleExpressionProblem('cron(0 4 ? * FUN *)')).toMatch(/"FUN" is not a value of day-of-week/);
    expect(scheduleExpressionProblem('cron(0 4 ? 13 MON *)')).toMatch(/month "13"/);
    expect(scheduleExpressionProblem('cron(0 4 ? * MON#6 *)')).toMatch(/weeks 1-5/);
    expect(scheduleExpressionProblem('cron(0 ? * * ? *)')).toMatch(
      /"\?" is only for day-of-month or day-of-week/,
    );
    expect(scheduleExpressionProblem('cron(*/0 4 * * ? *)')).toMatch(/increment .* positive whole number/);
  });

  it('refuses anything that is neither rate nor cron, naming both forms', () => {
    // Prepare / Act / Assess
    expect(scheduleExpressionProblem('every 15 minutes')).toMatch(/neither rate\(<value> <unit>\) nor cron/);
    expect(scheduleExpressionProblem('at(2026-01-01T00:00:00)')).toMatch(/neither rate/);
  });
});
