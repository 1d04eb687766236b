package telemetry

// Every metric rein exports is named here, so dashboards, alert rules and
// tests have one list to check against. Counters end in _total, durations
// are _seconds histograms, and no label ever carries a conversation id.
const (
	// transport (streams consume loop and publisher)
	MStageMessages      = "rein_stage_messages_total"    // {stage,outcome} outcome: ack, retry, dlq
	MStageHandleSeconds = "rein_stage_handle_seconds"    // {stage}
	MStageInFlight      = "rein_stage_in_flight"         // {stage} messages being handled now
	MStageQueued        = "rein_stage_queued_messages"   // {stage} delivered, waiting for their conversation or a slot
	MStageInFlightBytes = "rein_stage_in_flight_bytes"   // {stage} bytes of the messages held, queued or handled
	MStageConversations = "rein_stage_conversations"     // {stage} conversations with work
	MStageOrderHolds    = "rein_stage_order_holds_total" // {stage,outcome} held, released, timeout
	MStagePartitions    = "rein_stage_partitions"        // {stage} partitions this replica works
	MStageTerminated    = "rein_stage_terminated_total"  // {stage,reason} dead letter refused, message terminated: too_large, refused
	MPublished          = "rein_published_total"         // {stream}
	// MPublishIDConflicts counts messages JetStream took as duplicates of
	// another subject's or another event's message (never stored).
	MPublishIDConflicts = "rein_publish_id_conflicts_total" // {stream}
	MIngressRequests    = "rein_ingress_requests_total"     // {transport,outcome}

	// stream and consumer state (sampled from JetStream at scrape time)
	MStreamMessages      = "rein_stream_messages"               // {stream}
	MStreamBytes         = "rein_stream_bytes"                  // {stream}
	MConsumerPending     = "rein_consumer_pending_messages"     // {stream,consumer}
	MConsumerAckPending  = "rein_consumer_ack_pending_messages" // {stream,consumer}
	MConsumerMaxAckPend  = "rein_consumer_max_ack_pending"      // {stream,consumer}
	MConsumerRedelivered = "rein_consumer_redelivered_messages" // {stream,consumer}

	// model providers
	MModelRequests       = "rein_model_requests_total"  // {provider,model,purpose,outcome}
	MModelTokens         = "rein_model_tokens_total"    // {provider,model,purpose,kind}
	MModelRequestSeconds = "rein_model_request_seconds" // {provider,purpose}
	MModelAvailable      = "rein_model_available"       // {endpoint} 1 unless the endpoint's breaker is open
	MModelInFlight       = "rein_model_in_flight"       // {endpoint} calls in flight
	MModelLimit          = "rein_model_in_flight_limit" // {endpoint} the adaptive in-flight limit
	MModelQueued         = "rein_model_queued_calls"    // {endpoint} calls waiting for the limit
	MModelRejected       = "rein_model_rejected_total"  // {endpoint,reason} calls refused fast: breaker_open

	// detector
	MDetectorDecisions        = "rein_detector_decisions_total"   // {tenant,outcome} outcome: activated, clear, failed
	MDetectorActivations      = "rein_detector_activations_total" // {tenant,error_type}
	MDetectorInceptionSeconds = "rein_detector_inception_seconds" // {module}
	MDetectorGate             = "rein_detector_gate_total"        // {result} result: pass, skip
	MDetectorContextFetches   = "rein_detector_context_fetches_total"
	MExperimentDecisions      = "rein_experiment_decisions_total"         // {tenant,arm,outcome} arm: treatment, control
	MDetectorUnjudged         = "rein_detector_unjudged_turns_total"      // {reason} reason: stored, handed_on, sent_again
	MDetectorRepeats          = "rein_detector_repeats_not_planted_total" // {error_type}

	// injector and agent
	MInjectorInjections         = "rein_injector_injections_total"      // {error_type}
	MAgentWorkerTurns           = "rein_agentworker_turns_total"        // {outcome}
	MAgentWorkerSpeculations    = "rein_agentworker_speculations_total" // {result} hit, wasted, miss
	MAgentWorkerSpecTokens      = "rein_agentworker_speculation_wasted_tokens_total"
	MAgentWorkerTurnSeconds     = "rein_agentworker_turn_seconds"
	MAgentWorkerToolCalls       = "rein_agentworker_tool_calls_total" // {tool,outcome}
	MAgentWorkerUnverifiedTasks = "rein_agentworker_unverified_tasks_total"
	MAgentWorkerReleases        = "rein_agentworker_releases_total" // {reason} operator, quiet_period

	// escalation and sinks
	MEscalations         = "rein_escalations_total"      // {reason,error_type}
	MReports             = "rein_reports_total"          // {error_type}
	MSinkDeliveries      = "rein_sink_deliveries_total"  // {sink,outcome}
	MSinkDeliverySeconds = "rein_sink_delivery_seconds"  // {sink}
	MHandoffTimeouts     = "rein_handoff_timeouts_total" // {}
	MUnanswered          = "rein_unanswered_total"       // {reason} superseded, failed, human_path

	// detection quality measured from operators' labels (internal/labels)
	MLabelPrecision      = "rein_label_precision"        // {tenant} weighted precision (type must match)
	MLabelPrecisionLower = "rein_label_precision_lower"  // {tenant} its 95 % Wilson interval's lower bound
	MLabelPrecisionUpper = "rein_label_precision_upper"  // {tenant} and upper bound
	MLabelPrecisionCount = "rein_label_precision_labels" // {tenant} labels behind it
	MLabelPrecisionFloor = "rein_label_precision_floor"  // the configured floor the alert compares with
)

// OtherTenant is the tenant label value used once MaxTenantLabels distinct
// tenants have been seen, keeping label cardinality bounded.
const OtherTenant = "_other"

// MaxTenantLabels bounds the number of distinct tenant label values.
const MaxTenantLabels = 200

// TenantLabels bounds a tenant label's values: the first MaxTenantLabels
// tenants seen keep their name, later ones share OtherTenant. The zero
// value is ready; it is not safe for concurrent use (hold the owner's lock).
type TenantLabels struct{ seen map[string]bool }

// Label returns the label value of tenant t.
func (l *TenantLabels) Label(t string) string {
	if l.seen[t] {
		return t
	}
	if len(l.seen) >= MaxTenantLabels {
		return OtherTenant
	}
	if l.seen == nil {
		l.seen = map[string]bool{}
	}
	l.seen[t] = true
	return t
}

// Len is how many tenants keep their own name.
func (l *TenantLabels) Len() int { return len(l.seen) }
