package plan

import (
	"slices"
	"strings"

	"github.com/jetctl/jetctl/pkg/dlq"
)

// withoutRetrySubjects leaves out of subjects the retry subjects of `dlq
// setup --retry-subject` (those with prefix and suffix): they are not the
// plan files' to compare (see adoptRetrySubjects).
func withoutRetrySubjects(subjects []string, prefix, suffix string) []string {
	var out []string
	for _, s := range subjects {
		if !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) {
			out = append(out, s)
		}
	}
	return out
}

// adoptRetrySubjects keeps what `jetctl dlq setup --retry-subject` added
// to the server: a stream's retry subjects (_jetctl.retry.<stream>.<c>.>)
// and a consumer's own retry filter. They are jetctl's, not the plan
// files': a plan does not show them as changes, and an apply of the
// resource keeps them (an update without them would cut the consumer off
// from its redriven messages). The desired configs are copied, never
// changed in place.
func adoptRetrySubjects(desired *Desired, live *Live) {
	for _, r := range desired.Resources {
		switch {
		case r.Kind == KindStream && r.StreamConfig != nil:
			si := live.Streams[r.Name]
			if si == nil {
				continue
			}
			prefix := "_jetctl.retry." + r.Name + "."
			var add []string
			for _, s := range si.Config.Subjects {
				if strings.HasPrefix(s, prefix) && !slices.Contains(r.StreamConfig.Subjects, s) {
					add = append(add, s)
				}
			}
			if len(add) > 0 && len(r.StreamConfig.Subjects) > 0 {
				c := *r.StreamConfig
				c.Subjects = append(slices.Clone(c.Subjects), add...)
				r.StreamConfig = &c
			}
		case r.Kind == KindConsumer && r.ConsumerConfig != nil:
			ci := live.Consumers[r.Stream][r.Name]
			if ci == nil {
				continue
			}
			retry := dlq.RetryFilter(r.Stream, r.Name)
			want := dlq.ConsumerFilters(*r.ConsumerConfig)
			// A consumer declared without a filter takes every subject,
			// its retry subject included.
			if len(want) == 0 || slices.Contains(want, retry) || !slices.Contains(dlq.ConsumerFilters(ci.Config), retry) {
				continue
			}
			c := *r.ConsumerConfig
			c.FilterSubject, c.FilterSubjects = "", append(want, retry)
			r.ConsumerConfig = &c
		}
	}
}
