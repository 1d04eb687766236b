// Package experiment runs rein's randomised holdout: which conversations
// get no planted thought (the control arm), and what that did to their
// outcomes.
//
// Assignment (assign.go): a keyed hash (HMAC-SHA256 under a per-deployment
// key) of experiment, tenant and conversation puts each conversation in
// treatment or control, the same on every replica, restart and replay,
// with no shared state. The detector records the arm on every detection;
// a conversation keeps the arm of its first recorded detection
// (Sticky), so a later change of the holdout fraction never moves a
// conversation. A tenant's kill switch ends its holdout at once: every
// conversation is treated from its next turn. The configuration is a
// file re-read while rein runs (Watch).
//
// Analysis (stats.go, report.go): per arm, each outcome's mean, the
// difference with a 95% interval, an always-valid p-value and confidence
// sequence (mSPRT with a normal mixture), and the sample size still needed
// for a minimal effect. Simulation (simulate.go) proves the statistics
// offline.
//
// Consumes and produces nothing on NATS: the detector calls the
// Assigner; rein experiment report reads the streams and calls Analyze.
//
// Exports: Config, Tenant, Assigner, Assignment, Assign, LoadFile,
// Sticky, MaxHoldout; Conversation, Report, Analyze, Metric, Seq;
// Simulate, SimConfig, AA.
package experiment
