// --config FILE: the mesh configuration as the chart renders it (JSON or YAML); defaults when absent.
import { readFileSync } from 'node:fs';
import { ConfigError, defaultMeshConfig, parseMeshConfig, type MeshConfig } from '@minimesh/config';
import { parse } from 'yaml';
import { InjectorError } from './errors.js';

export function loadMeshConfig(file: string): MeshConfig {
  if (file === '') return defaultMeshConfig();
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InjectorError('MINIMESH_INJECTOR_CONFIG', `config ${file}: cannot read it: ${(err as Error).message}`, {
      cause: err,
    });
  }
  let data: unknown;
  try {
    data = parse(text); // YAML is a superset of JSON
  } catch (err) {
    throw new InjectorError(
      'MINIMESH_INJECTOR_CONFIG',
      `config ${file}: not valid JSON or YAML: ${(err as Error).message.split('\n')[0]}`,
      { cause: err },
    );
  }
  try {
    return parseMeshConfig(data ?? {});
  } catch (err) {
    if (err instanceof ConfigError)
      throw new InjectorError('MINIMESH_INJECTOR_CONFIG', `config ${file}: ${err.message}`, { cause: err });
    throw err;
  }
}
