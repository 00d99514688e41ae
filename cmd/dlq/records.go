package dlq

import "github.com/jetctl/jetctl/cmd/output"

// records collects what sweep, redrive and purge report message by
// message, as -o and --list ask: listing with -o jsonl, each record is
// printed as it comes; listing otherwise, they are kept for one table or
// document at the end; not listing, only the exceptions are kept (failed,
// refused, too large), for the summary to name one line each.
type records[T any] struct {
	p     *output.Printer
	list  bool
	items []T
	err   error // the first failure to print
}

func newRecords[T any](p *output.Printer, list bool) *records[T] {
	return &records[T]{p: p, list: list, items: []T{}}
}

// add takes one record; exception says whether the summary names it.
func (r *records[T]) add(item T, exception bool) {
	switch {
	case r.list && r.p.Format == "jsonl":
		if err := r.p.Item(item); err != nil && r.err == nil {
			r.err = err
		}
	case r.list, exception:
		r.items = append(r.items, item)
	}
}

// printList prints the kept records, listing in a format other than
// jsonl, as the document or the table that table builds.
func (r *records[T]) printList(table func([]T) output.Table) {
	err := r.p.Print(r.items, func() []output.Table {
		if len(r.items) == 0 {
			return nil
		}
		return []output.Table{table(r.items)}
	})
	if r.err == nil {
		r.err = err
	}
}
