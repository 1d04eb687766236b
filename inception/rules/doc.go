// Package rules is the rules inception module: no model, it judges from
// the candidate entities in the dialogue, the tool catalogue's names,
// descriptions and JSON Schemas, conflict and alternative markers and the
// taxonomy's domain notes, and, given Config.Products
// (LoadProductCatalogue reads a τ-bench products.json), the store's
// product options. A library; it consumes and produces no subjects.
//
// One file per thing it detects: anaphora.go (references with several
// candidates, entities.go counts them), interpretation.go (several
// readings), contradiction.go and counts.go (conflicts within the turn
// and with earlier ones), catalogue.go and options.go (what the tools and
// the catalogue cannot do), structural.go (what the turn's shape says),
// gate.go (the cascade gate's looser checks); cue.go compiles the cues
// with a literal prefilter (the module's cue literals indexed, found in
// one pass over the turn); memo.go keeps what is derived from one
// earlier message (the user's negations and party counts, the entities
// the agent listed), keyed by its text and bounded in bytes
// (Config.MemoBytes), so that a conversation analyses each message once.
//
// Exports:
//   - New (Config, Module): Precise activates on strong evidence only;
//     Recall is the cascade's gate, which loosens each precise check and
//     reads the user's turns only. Module implements inception.Module,
//     inception.ContextFree (the precise rules need the agent's replies
//     only when a check reading the agent's words could fire, the gate
//     never) and inception.Instant (it never waits).
//   - The learned complements (inception/learned) plug in through Config:
//     GateModel beside the gate's rules, TypedModel after the precise
//     rules; their features are the rules' signals (gate_features.go,
//     typed_features.go), given to the trainers by Module.GateFeaturizer
//     and Module.TypedFeaturizer.
package rules
