// Package memory is memoryd's domain core. It resolves who is calling,
// decides which events a command records, and answers the tools from the
// projections. Commands load, decide and append inside one write
// transaction of the event store, and reads go to the reader pool. It
// knows nothing of HTTP.
package memory
