// Package labels is how rein learns how well it detects from its own
// traffic: operators' labels of detections (dev.rein.label.v1), the review
// queue that chooses which turns to label, and precision and recall
// estimated from the labels with the queue's inclusion probabilities. It is
// the library behind `rein label`, `rein label queue` and
// `rein detect --eval --labels`; docs/labels.md is the operator's guide.
//
// # Consumes
//
// REIN_DETECTIONS (a tenant's detections of one UTC day, or one
// conversation's) and REIN_LABELS, read through ordered consumers
// (streams.ReadStream), selected by subject so that one tenant's read
// never returns another's events.
//
// # Produces
//
// dev.rein.label.v1 on rein.labels.<tenant>.<conv>.<turn>.<labeller>
// (REIN_LABELS), with the Nats-Msg-Id schemas.LabelMsgID: the same label
// twice is stored once; a labeller's later, different label of a turn
// is stored too, and the last one counts.
//
// # The review queue
//
// Per tenant and UTC day, each detection falls in a stratum: its error
// type when rein activated, clean otherwise (failed detections included:
// nothing was planted). A daily budget is split between clean turns (a
// share, default half: recall needs them) and the activated types (the
// rest, equally), a stratum smaller than its share taking all its turns
// and leaving the remainder to the others. A turn is in the queue when a
// hash of the sampling key, tenant, conversation and turn, read as a
// number in [0,1), is below its stratum's probability (Poisson sampling):
// every replica and every run draws the same queue, the probability of
// each turn is known exactly, and the budget is met on average. A day's
// queue is drawn once the day is over, so its strata are whole.
//
// # Estimates
//
// Labels from the queue carry their inclusion probability π; each counts
// 1/π (Horvitz–Thompson), so the few clean turns drawn from many stand
// for all of them. Precision and recall are ratios of such weighted sums,
// per type and overall, each with a 95 % Wilson interval on the weighted
// proportion with Kish's effective sample size, and the number of labels
// behind it. Labels given outside the queue are counted but never
// weighted into a figure: nobody knows how they were chosen.
//
// QualityOf measures another decision of the labelled turns with the same
// weights (a candidate model replayed, rein shadow --candidate); Latest is
// which label of a turn counts, Truth what it says the turn holds.
//
// # Learning
//
// The labels are examples too: rein train fits on them (audit builds
// their inputs), and FewShot picks each tenant's latest, corrections
// first, for the llm module's prompt.
//
// # Metrics
//
// Gauges, through NewQualityMetrics (registered by the runtime):
// rein_label_precision{tenant}, its interval's bounds
// rein_label_precision_lower|upper{tenant}, rein_label_precision_labels{tenant}
// and rein_label_precision_floor; tenants bounded by
// telemetry.TenantLabels.
package labels
