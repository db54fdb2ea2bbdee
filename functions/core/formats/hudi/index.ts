// Apache Hudi: recognised by its `.hoodie/` folder and refused wherever met, not a registered format yet. The folder
// holds what the format declares so far (its words as a foreign table); the TableFormat comes with its support.
export { hudiForeignTable } from './foreign-table.js';
