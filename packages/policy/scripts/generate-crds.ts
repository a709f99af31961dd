// Writes charts/minimesh-crds/templates/policy-crds.yaml from src/crds.ts.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { CRD_TEMPLATE_PATH, renderCrdTemplate } from '../src/crds.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));
const text = renderCrdTemplate((v) => stringify(v, { lineWidth: 0 }));
writeFileSync(root + CRD_TEMPLATE_PATH, text);
console.log(`wrote ${CRD_TEMPLATE_PATH} (${text.split('\n').length} lines)`);
