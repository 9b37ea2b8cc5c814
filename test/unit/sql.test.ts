import { describe, expect, it } from 'vitest';
import { sql } from '../../platform/db/sql.ts';

describe('the sql tag (platform/db/sql.ts)', () => {
  it('makes each interpolated value a placeholder with its parameter, in text order', () => {
    const s = sql`select * from t where a = ${1} and b = any(${['x', 'y']}::text[])`;
    expect(s.text).toBe('select * from t where a = ? and b = any(?::text[])');
    expect(s.params).toEqual([1, ['x', 'y']]);
  });

  it('splices a nested Sql with its own parameters where it stands, however the parts were made', () => {
    const late = sql`c = ${'late'}`;
    const early = sql`a = ${'early'}`;
    const s = sql`with q as (select ${'first'}::text) select * from t where ${sql.join([early, sql.raw('true'), late], ' and ')} limit ${5}`;
    expect(s.text).toBe('with q as (select ?::text) select * from t where a = ? and true and c = ? limit ?');
    expect(s.params).toEqual(['first', 'early', 'late', 5]);
  });

  it('joins plain values as placeholders; raw text and the empty piece add no parameters', () => {
    const s = sql`f(${sql.join([1, 2, 3])})${sql.empty} order by ${sql.raw('x desc')}`;
    expect(s.text).toBe('f(?, ?, ?) order by x desc');
    expect(s.params).toEqual([1, 2, 3]);
  });
});
