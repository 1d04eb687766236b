// Package taubench runs τ-bench's airline and retail domains natively in Go,
// faithfully enough that a conversation's observations, database hash and
// reward are those of the reference benchmark (see ../shared/taubench/SPEC.md).
//
// Consumes: τ-bench-format data directories (airline: flights.json,
// reservations.json, users.json; retail: orders.json, products.json,
// users.json; optional tools.json overriding tool descriptions),
// tasks_<split>.json task files, oracle and trajectory files (for Check).
// Produces: tool observations, fingerprints, rewards; no events, no metrics.
//
// Exports:
//   - Backend, the tool-backend interface of the agent loop, and Observe.
//   - Domain (Load, LoadFS, Sample): one pristine database shared read-only
//     by all conversations (and, through Load, by every pipeline of a
//     process that loads the same files). NewSession opens a conversation's state as a
//     copy-on-write overlay (a record is copied on its first write), so a
//     session costs nothing until it writes and grows with what it changed.
//     Session implements Backend; Session.Marshal and RestoreSession move a
//     conversation's state to another worker; Session.Writes tells whether
//     a call may have changed it.
//   - ToolCatalogue: the tool lists (τ-bench names, parameters, types and
//     enums, described in our own words).
//   - Session.Fingerprint (τ-bench's database hash, byte-exact), Domain.Reward,
//     ReplayGroundTruth, OutputsFound, PassHatK, LoadTasks, Check.
//
// Values follow Python's data model where τ-bench's results depend on it:
// objects keep insertion order, integers and floats stay distinct, results
// are rendered like json.dumps and the hash like str() of nested tuples.
package taubench
