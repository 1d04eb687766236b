// Package detector is rein's detector stage (Config, Deps, New, Run): it
// runs an inception module (package inception) on every user turn.
//
//   - consumes REIN_TURNS user turns, rein.turns.<tenant>.<conv>.user
//     (durable "detector", which an older all-turns durable is narrowed
//     to); each is judged. Undecodable user turns are dead-lettered to
//     rein.dlq.detector and removed from REIN_TURNS.
//   - reads agent replies (rein.turns.<tenant>.<conv>.agent) back into a
//     conversation's cached surface context only when the module needs
//     them: a module implementing ContextFree (rules; the cascade when its
//     gate holds the turn back) says so per turn, any other (llm) always
//     does. The replies stored since the last one merged are read with
//     batched direct gets (streams.ReadSubject), validated like consumed
//     events (an undecodable one is logged and left out), and merged in
//     stream order. A conversation not in memory is rebuilt the same way
//     from its stored user and agent turns, unless a headerless direct get
//     (streams.FirstData) shows the turn at hand is its first stored.
//   - produces one dev.rein.detection.v1 per user turn on
//     rein.detections.<tenant>.<conv>, id detection.<tenant>.<conv>.<turn>,
//     yes or no; a module error, deadline or panic gives failed=true, no
//     activation (fail-open; a panic is logged with its stack).
//     An activation of the error type planted at the conversation's
//     previous user turn is not planted again (rein=false, the type and
//     evidence kept, fail_reason says why): the agent answered that turn
//     with the plan already in its context.
//     The turn's dev.rein.task.v1 on rein.tasks.<tenant>.<conv>, id
//     task.<tenant>.<conv>.<turn>, built by the injector library
//     (injector.Tasks: the inception block when the detection activated,
//     signed with Deps.TaskKey), is published in the same batch, and the
//     turn is acked once both are stored.
//   - what of a turn's outputs is stored is answered in one place,
//     ConsumerConfig.Stored (stage_state.go: its detection, then its task,
//     each by streams.TurnStored — the conversation's last, and only when
//     that is of a later turn, the turn's own, since a later turn that
//     overtook this one past the order gate's MaxHold proves nothing about
//     it). The consume loop asks it for a user turn delivered before
//     without an ack (a worker stopped mid-turn, an ack lost) or stored
//     longer ago than Config.RecheckAfter (half the detections' duplicate
//     window: a durable created anew replays REIN_TURNS from its start),
//     and the order gate for a held turn's predecessor. Both stored, the
//     turn is acked with no second inception call and no output; its
//     detection alone, the task is built from it, so that what the agent
//     is told is what was recorded (a second call could answer otherwise).
//     A publish that fails after the module answered is retried with that
//     answer. A user turn sent again as a new message (a platform's retry: its number is
//     already in the conversation's context, from another message, and a
//     detection of it is stored) is acked with no output; one whose first
//     copy was dead-lettered is judged; one with other text than its first
//     copy is dead-lettered with reason conflicting_duplicate.
//   - with Deps.Assign (a tenant's holdout experiment, package
//     experiment), every detection records the conversation's experiment
//     and arm; the conversation keeps its first detection's arm (read back
//     from its last stored detection when its context is rebuilt). The
//     decision is taken the same way in both arms; the injector plants
//     nothing for control.
//   - exports rein_detector_decisions_total{tenant,outcome},
//     rein_experiment_decisions_total{tenant,arm,outcome},
//     rein_detector_activations_total{tenant,error_type},
//     rein_detector_inception_seconds{module},
//     rein_detector_context_fetches_total (reads of agent replies),
//     rein_detector_repeats_not_planted_total{error_type},
//     rein_detector_unjudged_turns_total{reason} (turns acked without a
//     module call: handed_on, sent_again; those whose outputs are all
//     stored are rein_stage_messages_total{outcome="stored"}),
//     rein_injector_injections_total{error_type} (tasks with an inception
//     block)
//     and, for the cascade, rein_detector_gate_total{result} from
//     Cascade.Stats.
package detector
