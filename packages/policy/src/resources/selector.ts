// Kubernetes label selectors (matchLabels AND matchExpressions; empty selects everything).
import { arr, FieldError, obj, str, stringMap } from './fields.js';

export interface LabelSelector {
  matchLabels: Record<string, string>;
  matchExpressions: Array<{ key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values: string[] }>;
}

const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'] as const;

export function parseLabelSelector(v: unknown, path: string): LabelSelector {
  const o = obj(v ?? {}, path);
  return {
    matchLabels: stringMap(o.matchLabels, `${path}.matchLabels`),
    matchExpressions: arr(o.matchExpressions, `${path}.matchExpressions`).map((e, i) => {
      const p = `${path}.matchExpressions[${i}]`;
      const x = obj(e, p);
      const operator = x.operator;
      if (!OPERATORS.includes(operator as never)) throw new FieldError(`${p}.operator`, OPERATORS.join(', '), operator);
      const values = arr(x.values, `${p}.values`).map((s, j) => str(s, `${p}.values[${j}]`));
      if ((operator === 'In' || operator === 'NotIn') && values.length === 0)
        throw new FieldError(`${p}.values`, `at least one value for ${operator as string}`, x.values);
      return {
        key: str(x.key, `${p}.key`),
        operator: operator as LabelSelector['matchExpressions'][number]['operator'],
        values,
      };
    }),
  };
}

export function selectorMatches(selector: LabelSelector, labels: Readonly<Record<string, string>>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels)) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const value = labels[e.key];
    switch (e.operator) {
      case 'In':
        if (!has || !e.values.includes(value as string)) return false;
        break;
      case 'NotIn':
        if (has && e.values.includes(value as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}

/** "app=web,tier in (a,b)" for people. */
export function formatSelector(selector: LabelSelector): string {
  const parts = Object.entries(selector.matchLabels).map(([k, v]) => `${k}=${v}`);
  for (const e of selector.matchExpressions) {
    if (e.operator === 'Exists') parts.push(e.key);
    else if (e.operator === 'DoesNotExist') parts.push(`!${e.key}`);
    else parts.push(`${e.key} ${e.operator === 'In' ? 'in' : 'notin'} (${e.values.join(',')})`);
  }
  return parts.length ? parts.join(',') : '(all)';
}
