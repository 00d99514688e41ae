package output

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/itchyny/gojq"

	"github.com/jetctl/jetctl/pkg/jqpred"
)

// Filter is the one --filter evaluator (kv tail, replay, stream tail, dlq):
// a jq program that keeps an item when its first result is neither false
// nor null. The simple programs most filters are decide on an item's
// fields alone (pkg/jqpred, held to gojq by its tests); the rest run in
// gojq on the whole document. A program that fails on an item (say,
// .data.id on a text payload) does not keep it, and the caller warns once
// with Warning: streams and buckets mix JSON and text, and a wait for one
// item must not die on another's. It is safe for concurrent use.
type Filter struct {
	code *gojq.Code
	fast *jqpred.Predicate
	noun string
}

// CompileFilter compiles a --filter program; an empty one gives nil. noun
// names, in the warning, the items a failing program does not keep
// ("messages it fails on").
func CompileFilter(expr, noun string) (*Filter, error) {
	if expr == "" {
		return nil, nil
	}
	code, err := CompileJQ(expr)
	if err != nil {
		return nil, err
	}
	return &Filter{code: code, fast: jqpred.Parse(expr), noun: noun}, nil
}

// Keep decides on obj's fields when the program is simple enough (obj may
// be nil), and otherwise runs the program on document(), the item's whole
// generic JSON form. err is the program's failure on this item, which is
// then not kept. A document that cannot be built is not kept, silently.
// When ctx ends the program stops and keeps nothing, with no error: the
// caller is stopping too.
func (f *Filter) Keep(ctx context.Context, obj jqpred.Object, document func() (any, error)) (bool, error) {
	if obj != nil {
		if keep, decided := f.fast.Eval(obj); decided {
			return keep, nil
		}
	}
	input, err := document()
	if err != nil {
		return false, nil
	}
	v, ok := f.code.RunWithContext(ctx, input).Next()
	if !ok {
		return false, nil
	}
	if err, isErr := v.(error); isErr {
		if ctx.Err() != nil {
			return false, nil
		}
		return false, err
	}
	return v != nil && v != false, nil
}

// Warning is the one line a failure on item ("seq 2") gives on stderr.
func (f *Filter) Warning(item string, err error) string {
	return fmt.Sprintf("jetctl: warning: --filter failed on %s (%v); %s do not match\n", item, err, f.noun)
}

// WarnOnce returns a func that writes Warning to w the first time it is
// called, and nothing after; it may be called from several goroutines.
func (f *Filter) WarnOnce(w io.Writer) func(item string, err error) {
	var once sync.Once
	return func(item string, err error) {
		once.Do(func() { io.WriteString(w, f.Warning(item, err)) })
	}
}
