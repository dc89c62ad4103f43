// Package projections maintains memoryd's read models (tasks, agents and
// their fence state, note files, idempotent call results, history entries,
// branches, windows and their search filters) from the event log.
// Projector is the log's projector: it applies each event inside the
// transaction that appends it and keeps what it learns there in a state of
// that transaction's own. Rebuild replays the whole log from position 1;
// Digest fingerprints every projection so two databases can be compared.
// Appliers read only the event and the projection tables: no clock, no
// randomness.
package projections
