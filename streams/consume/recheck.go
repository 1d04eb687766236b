package consume

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/reinception/rein/streams"
)

// RecheckAfter is the age (Decoded.Stored) past which a stage checks an
// input against the outputs already stored before handling it again: the
// configured age when set, else half the duplicate window of the stream the
// outputs go to, within which their Nats-Msg-Id still drops a repeat.
func RecheckAfter(configured time.Duration, out jetstream.Stream) time.Duration {
	if configured != 0 {
		return configured
	}
	return out.CachedInfo().Config.Duplicates / 2
}

// WarnShortWindow logs a warning when the duplicate window of out, the
// stream a stage's outputs go to, is shorter than the stage's AckWait. An
// input is redelivered AckWait after a crash: the outputs of a turn cut
// short, stored before the crash, have then left the window and are
// stored a second time. (The rechecks make replays and redeliveries of
// finished turns safe whatever the window; this is what remains.)
func WarnShortWindow(log *slog.Logger, cc ConsumerConfig, out jetstream.Stream) {
	cc.defaults()
	if w := out.CachedInfo().Config.Duplicates; w < cc.AckWait {
		log.Warn("the duplicate window is shorter than the stage's ack wait: after a crash, outputs of a turn cut short may be stored twice",
			"stage", cc.Stage, "stream", out.CachedInfo().Config.Name, "duplicates", w, "ack_wait", cc.AckWait)
	}
}

// lookupOutputs is a consumer's start-up over the streams its stage
// publishes to (ConsumerConfig.Outputs): it looks each up, warns when
// one's duplicate window is shorter than the consumer's ack wait
// (WarnShortWindow), and returns them with the recheck age: RecheckAfter
// of the configured age and the first output, the stream whose stored
// output tells whether an input was handled.
func lookupOutputs(ctx context.Context, js jetstream.JetStream, log *slog.Logger, cc ConsumerConfig) (streams.OutputStreams, time.Duration, error) {
	outs := make(streams.OutputStreams, len(cc.Outputs))
	for _, name := range cc.Outputs {
		s, err := js.Stream(ctx, name)
		if err != nil {
			return nil, 0, fmt.Errorf("%s: stream %s: %w", cc.Stage, name, err)
		}
		outs[name] = s
		WarnShortWindow(log, cc, s)
	}
	if len(cc.Outputs) == 0 {
		return outs, cc.RecheckAfter, nil
	}
	return outs, RecheckAfter(cc.RecheckAfter, outs[cc.Outputs[0]]), nil
}
