// Apache Hudi: a registered format (format.ts) that clusters small base files of Copy-on-Write tables and base-only
// file groups of Merge-on-Read tables through Hudi's own timeline, and its words as a foreign table.
export { hudiForeignTable } from './foreign-table.js';
export { type HudiFormatServices, hudiTable } from './format.js';
