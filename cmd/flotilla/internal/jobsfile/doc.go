// Package jobsfile reads the jobs file of `flotilla priority`: a JSON
// array of job objects, or one per line (JSON lines), each
// {"id", "user", "bank", "queue", "urgency"}, decoded strictly with every
// problem named by field and value (Decode). The jobs are then ranked by
// package priority against a bank tree.
package jobsfile
