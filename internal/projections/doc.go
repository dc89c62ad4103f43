// Package projections maintains memoryd's read models from the event log.
//
// The read models are tasks, agents and their fence state, note files,
// idempotent call results, history entries, branches, windows and their
// search filters. Projector applies each event inside the transaction that
// appends it and keeps what it learns in a state of that transaction's own.
// Rebuild replays the whole log from position 1, and Digest fingerprints
// every projection so two databases can be compared. Appliers read only the
// event and the projection tables, never a clock or randomness.
package projections
