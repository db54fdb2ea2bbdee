// The tests' Hudi writer is the project's sample writer (functions/tools/sample-hudi.ts), which the demo runs too;
// re-exported here so the tests keep naming their support module.
export * from '../../functions/tools/sample-hudi.js';
