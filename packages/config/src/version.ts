// The version every program reports and the injector puts on the images it adds. Written by
// scripts/version.mjs from the root package.json; its own module, so that a program that needs only the
// version does not load the configuration schema (zod) with it.
export const MINIMESH_VERSION = '0.1.0';
