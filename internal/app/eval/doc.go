// Package eval is rein's measurement harness: whether Reasoning Inception
// makes an agent recover (scenarios, success criterion, statistics,
// reports), and the latency statistics (Percentile, Ms) shared by the bench
// and demo drivers.
//
// Consumes: JSONL scenario sets (LoadScenarios; the bundled set is
// embedded, Bundled), τ-bench task files read at run time from a data
// directory (TaskSource, default ../shared/taubench), trajectories of
// played scenarios (Trajectory, scored with the domain's τ-bench reward),
// and per-play results (Result).
//
// Produces: verdicts (Score), report.json, report.md and two SVG charts
// (Report, WriteReport, drawn with gonum.org/v1/plot), side-by-side
// comparisons of two runs (Compare). It publishes no events and exports no
// metrics.
//
// Exports: Percentile, Ms; Scenario, Opening, LoadScenarios, LoadOptions, Bundled,
// TaskSource; ToolCall, Trajectory, Verdict, Score, StateChanging;
// PassHatK, BootstrapMean, McNemar, McNemarPaired, CohenKappa, TrialKappa;
// Result, NewResult, Report, RunReport, Metrics, WriteReport,
// PassAt1Chart, ActivationChart, Compare, Comparison.
//
// The runner that plays scenarios through the pipeline (`rein eval run`)
// is the subpackage run; the model-written scenario sets (`rein eval
// scenarios generate`) are the subpackage generate. The scenario and report formats, and how to run
// an evaluation, are described in README.md beside this file.
package eval
