// Package memory is memoryd's domain core. It resolves who is calling
// (tasks, agents, addresses), decides which events a command records, and
// answers the tools from the projections. Commands run as "load, decide,
// append" inside one write transaction of the event store; reads go to the
// reader pool. It knows nothing of HTTP.
package memory
