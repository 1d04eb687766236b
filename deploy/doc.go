// Package deploy holds rein's deployment artefacts and the tests that keep
// them honest. It has no Go API and consumes, produces and exports nothing
// at run time.
//
//   - prometheus/rules.yml: recording rules (activation ratio overall, per
//     error type and per tenant; decision and failure rates; a 7-day
//     baseline) and alerts (inception failure rate, a consumer whose backlog
//     grows or whose ack-pending sits at max_ack_pending, dead letters,
//     webhook delivery failures and retries, handoff timeouts, an activation
//     ratio far off its 7-day level), unit-tested by rules_test.yml and
//     rules_anomaly_test.yml with `promtool test rules`.
//
//   - grafana/rein.json: the Grafana dashboard (activation by error type,
//     decisions by outcome, inception latency p50/p99, escalations and
//     reports, sinks, model tokens, consumer lag, dead letters).
//
//   - Dockerfile (+ Dockerfile.dockerignore): multi-stage build of a
//     static, stripped rein stamped with version, revision and build time,
//     run as UID 65532 on distroless static with a HEALTHCHECK through
//     `rein health`; with no arguments it serves the whole pipeline on
//     0.0.0.0:8080 and 0.0.0.0:4222 (--insecure: credentials still
//     required, no TLS). Build from the repository root.
//
//   - Makefile: build, test, test-cluster-long, lint, image, demo,
//     compose-secrets, compose-up/down, k8s-render (make -f deploy/Makefile;
//     the repository's top level is fixed, so it lives here).
//
//   - compose/: a 3-node NATS JetStream cluster (nats.conf, including the
//     auth.conf `rein keys server-config` generates), a one-shot provision
//     service holding admin.nk, each stage and the ingress as its own
//     service on R3 streams holding reader.nk and its own identity's seed,
//     Prometheus with rein's rules (scraping with a metrics-role token
//     that make compose-secrets writes) and Grafana with its dashboard.
//     The agent worker and the detector get the model's REIN_LLM_*
//     settings, the key from env_file secrets/llm.env; profile
//     local-model adds an Ollama server and a pull service they wait for.
//
//   - k8s/: a kustomize base: a Deployment per stage and for the ingress
//     (probes on /healthz and /readyz, resources, non-root read-only
//     containers, reader.nk and the stage's own seed from Secret
//     rein-nats-keys, HTTP tokens from Secret rein-http-tokens), the
//     rein-provision Job (admin.nk alone), PodDisruptionBudgets, the
//     ingress Service and a headless Service per stage, NetworkPolicies,
//     the rein.yaml ConfigMap (R3 streams in 8 partitions), a
//     ServiceMonitor scraping every Service's /metrics, and a KEDA
//     ScaledObject per partitioned stage (detector, agent
//     worker: 2 to 8 replicas on the stage's consumer lag, summed over its
//     partition durables by a Prometheus query); nats-values.yaml for the
//     official NATS Helm chart, with rein's identities from `rein keys
//     server-config --helm-values`. The model's settings are ConfigMap
//     rein-model, its key Secret rein-llm; every Deployment has a
//     startupProbe.
//
//   - k8s-tls/: the base plus an Ingress with TLS for the ingress Service.
//
//   - helm/rein: the same deployment as a Helm chart (values for each
//     stage, the model with its key by Secret reference, the streams
//     section, probes; PDB and NetworkPolicy on, ServiceMonitor and KEDA
//     toggles off, an Ingress with TLS off; the provision Job as a pre-install/pre-upgrade hook),
//     with values.schema.json and NOTES.txt. It creates no Secret.
//
// The tests check that every rein_* metric the dashboard and the rules
// query is one rein exports (internal/telemetry/names.go), that the
// dashboard is well formed and its queries parse, and run promtool when it
// is installed; with REIN_REQUIRE_PROMTOOL=1 (set by .ci/run) or CI set, a
// missing promtool fails those tests instead of skipping them.
// The Kubernetes base is rendered with kustomize's own library (krusty,
// what kubectl kustomize runs) and every rendered object is decoded
// strictly (an unknown field or a value of the wrong type fails) into
// the Kubernetes API's Go types, the Prometheus Operator's ServiceMonitor
// type, and a ScaledObject type written out in the test (KEDA's own lives
// in the operator's module). The tests then check probes, resources,
// security contexts, secret references, the NATS seeds each workload
// mounts (exactly its own and reader's; admin only in the provision job),
// selectors, the ServiceMonitor's Services and port, and the
// ScaledObjects' bounds (2 to the partitions) and queries, which promtool
// evaluates on series two replicas export; they check the compose file,
// nats.conf, prometheus.yml, the Dockerfile and the Makefile; and build
// rein once to check that every flag and REIN_* variable the artefacts
// use is one `rein serve --help` (or `rein health --help`) lists, and
// that REIN_LLM_* names are internal/llm's. The Helm chart is linted and
// rendered with helm when it is on PATH (REIN_REQUIRE_HELM=1, set by
// .ci/run, makes its absence a failure) and checked as the kustomize
// base is. The image's CMD is run with the binary the tests build. No
// Kubernetes cluster or Docker daemon is needed.
package deploy
