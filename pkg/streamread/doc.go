// Package streamread is the one place jetctl reads a stream from: it fixes
// a range (Resolve), reads it in stream order with one of three readers
// (Read: ordered, direct or get), and owns what they share: the in-order
// pull reader (ReadOrdered), batched direct gets, and subject matching.
// Reading never consumes or changes the stream. replay, stream tail, dlq
// and kv read through it; pkg/jsapi keeps only the raw API requests.
package streamread
