package replay

// longHelp is replay's --help text.
const longHelp = `Read a range of a stream without consuming or changing it.

The range is fixed when the command starts, so replay always ends (unless
--follow): --from-seq/--to-seq (inclusive), --since, --from-time/--to-time
(RFC 3339; the end is exclusive), --last N, narrowed by --subject (repeatable,
wildcards allowed). Times resolve to sequences on the server. An empty range
is not an error.

By default each message is a JSON line on stdout:
  {"stream","seq","subject","time","headers","data" or "data_b64","size"}
data is the payload's JSON document when it is JSON, as stored, else its
text; data_b64 holds payloads that are not UTF-8, and follows data when
data cannot give the exact bytes back (docs/output.md). --jq transforms
each line, --filter keeps the messages for which a jq program is true,
--raw prints payloads only.

--to SUBJECT republishes each message: SUBJECT may contain {subject} (the
original subject; '{subject}' alone keeps it) or be a prefix mapping like
'restore.>' (restore.orders.x for orders.x). Quote it: > is a shell
redirect. --to-server/--to-context publish to another cluster. Headers
the server acts on (Nats-Msg-Id, Nats-Rollup, Nats-Incr, Nats-Batch-*, ...:
docs/headers.md) move to Jetctl-Orig-<Name>, so a copy never purges, opens
a batch or adds to a counter; provenance goes into Jetctl-Source-Stream,
-Seq, -Subject and -Time (--no-provenance to leave it out). Each copy has
Nats-Msg-Id replay:<stream>:<seq>:<target subject>, so a re-run inside the
target's duplicate window stores nothing twice; with --checkpoint, a re-run
also looks in the target for copies stored after the checkpoint, so it adds
none twice even outside that window. The summary counts only copies the
target acknowledged; copies it already had are counted as duplicates
(nothing new stored). To copy again on purpose (say, after purging the
target), use --new-msg-id: the ids get a run id of their own (kept in the
checkpoint, so a resumed run stays one copy). Every acknowledgement is
checked; failures are retried, then listed; exit code 4 when some copies
were stored and some failed, 1 when none was stored. After a reconnect the
copies not acknowledged are sent again at once; stderr says when the
connection went away and when it came back. With --to, -o json (or --jq)
prints the summary on stdout: messages, bytes, duplicates, unconfirmed,
failed, ...

--ttl says what a copy does with the original's Nats-TTL: remaining (the
default) gives it what is left, counted from the original's stored time,
so it expires when the original would have, and skips a message whose TTL
has passed; keep gives the whole TTL again; drop none (the copy never
expires). --markers skip (the default) does not copy subject delete
markers (Nats-Marker-Reason), which on an ordinary stream are empty
messages; keep copies them as they are, the default when the target is a
KV bucket's stream, which reads them as deletes. Skipped messages are
counted in the summary. Before the first copy, the streams the copies can
go to are looked up: a counter stream (allow_msg_counter), or one without
allow_msg_ttl where copies may carry a TTL, is refused (exit 2), with
nothing sent.

--to-file F writes the JSON lines to F; --from-file F reads such a dump back
(to stdout, or with --to to republish it). Payload bytes and headers survive
the round trip exactly. A dump is read whole before anything is published:
a bad line is exit 2 naming file:line, with nothing sent.

A --jq or --filter program that fails on a message (.data.x on a text
payload) skips it, with one warning naming its sequence; the summary counts
them. -o jsonl (default) and -o json print JSON lines; -o table and -o yaml
are refused, except with --dry-run, whose report takes any -o.

--checkpoint FILE records the last sequence done (the last acknowledged one
when republishing) and a re-run with the same file continues after it, up to
the end fixed by the first run. On SIGINT or SIGTERM replay stops reading,
waits for acknowledgements in flight (at most 2s, not while disconnected;
the rest are reported as unconfirmed), writes the checkpoint, prints its
summary and exits 130.

Readers (--reader): ordered (an ordered consumer; default for limits
streams), direct (batched direct get; default for workqueue and interest
streams, which a consumer could disturb), get (one request per message, on
the stream leader; where direct access is off).`

const examples = `  jetctl replay ORDERS --since 15m
  jetctl replay ORDERS --from-time 2026-11-29T02:10:00Z --to-time 2026-11-29T02:25:00Z --subject 'orders.*'
  jetctl replay ORDERS --last 10 --jq '.data.order_id'
  jetctl replay ORDERS --to-file orders.jsonl
  jetctl replay --from-file orders.jsonl --to 'restore.>' --checkpoint restore.ckpt
  jetctl replay ORDERS --to 'replayed.{subject}' --rate 500/s --checkpoint orders.ckpt
  jetctl replay ORDERS --to '{subject}' --to-context dr-cluster
  jetctl replay ORDERS --to 'reprocess.{subject}' --ttl keep
  jetctl replay --from-file orders.jsonl --to 'restore.>' --ttl drop
  jetctl replay ORDERS --to orders.reprocess --to-context dr-cluster --dry-run`
