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
//     from its stored user and agent turns.
//   - produces one dev.rein.detection.v1 per user turn on
//     rein.detections.<tenant>.<conv>, id detection.<tenant>.<conv>.<turn>,
//     yes or no; a module error, deadline or panic gives failed=true, no
//     activation (fail-open; a panic is logged with its stack).
//     With Deps.Then set (cmd/rein fuses the injector into this stage when
//     both run in one process), the event Then builds from the detection —
//     the turn's dev.rein.task.v1 on rein.tasks.<tenant>.<conv> — is
//     published in the same batch, and the turn is acked once both are
//     stored.
//   - a user turn delivered before without an ack (a worker stopped
//     mid-turn, an ack lost), or stored longer ago than
//     Config.RecheckAfter (half the detections' duplicate window: a
//     durable created anew replays REIN_TURNS from its start), is first
//     checked against the conversation's last stored detection (one direct
//     get) and, fused, its task (Deps.ThenStored): when they are of this
//     turn, or of a later one and this turn's own are stored too
//     (streams.TurnStored reads the conversation's for them: a later turn
//     that overtook this one past the order gate's MaxHold proves nothing
//     about it), the turn is acked with no second inception call and no
//     output; when only this turn's detection is stored, the task
//     is built from it, so that what the agent is told is what was
//     recorded (a second call could answer otherwise). A publish that
//     fails after the module answered is retried with that answer. A user
//     turn sent again as a new message (a platform's retry: its number is
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
//     rein_detector_unjudged_turns_total{reason} (turns acked without a
//     module call: stored, handed_on, sent_again)
//     and, for the cascade, rein_detector_gate_total{result} from
//     Cascade.Stats.
package detector
