package migrate

import (
	"context"
	"fmt"

	"github.com/jetctl/jetctl/pkg/dlq"
)

// A move to another name takes the stream's DLQ along (pkg/dlq rename.go):
// the advisories name the stream, so a capture of the old name would hear
// nothing from the new one. planDLQ looks before anything changes (and
// refuses a DLQ that cannot follow: one on another server), prepareDLQ
// makes the new name's capture before the cutover, and finishDLQ carries
// the advisories not yet swept once the source is gone, before the
// consumers resume. A replacement under the same name (Replace) changes
// no name, so its DLQ stays as it is.

// planDLQ finds the source's DLQ, if a cutover moves the stream to
// another name; it refuses a DLQ the move cannot carry.
func (m *mover) planDLQ(ctx context.Context) error {
	if !m.cfg.Cutover || m.hop.lockHeld {
		return nil
	}
	p, err := dlq.PlanMove(ctx, m.src.JS, m.srcName, m.dstName)
	if err != nil || p == nil {
		return err
	}
	if !m.same {
		// The capture and the DLQ live on the source's server; the
		// advisories of the moved stream are sent on the target's.
		return fmt.Errorf("%w: stream %q has a DLQ on this server (capture %q, DLQ %q), which a move to another server or domain does not carry: "+
			"copy without --cutover, or first sweep it (jetctl dlq sweep --stream %s) and delete %q (advisories are no longer captured), "+
			"then cut over and run jetctl dlq setup --stream %s against the target; %q stays here with its entries; nothing was changed",
			ErrInvalid, m.srcName, p.FormerCapture, p.DLQ, m.srcName, p.FormerCapture, m.dstName, p.DLQ)
	}
	m.dlqMove = p
	m.sum.DLQ = p
	return nil
}

// prepareDLQ creates the target name's capture before the cutover.
func (m *mover) prepareDLQ(ctx context.Context) error {
	if m.dlqMove == nil {
		return nil
	}
	if err := dlq.PrepareMove(ctx, m.src.JS, m.dlqMove); err != nil {
		return fmt.Errorf("the DLQ of %q: %w", m.srcName, err)
	}
	m.at("dlq-prepared")
	return nil
}

// finishDLQ carries the advisories not yet swept and gives the DLQ to the
// target's name: the source is gone, its consumers not yet resumed.
func (m *mover) finishDLQ(ctx context.Context) error {
	if m.dlqMove == nil {
		return nil
	}
	if err := dlq.FinishMove(ctx, m.src.JS, m.dlqMove, m.at); err != nil {
		return fmt.Errorf("the DLQ of %q: %w; run the same command again to finish", m.srcName, err)
	}
	return nil
}
