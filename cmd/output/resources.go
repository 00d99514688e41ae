package output

import "github.com/jetctl/jetctl/pkg/setupresult"

// ResourcesTable is the table of what a setup command (dlq setup, events
// record) created, found, updated or adopted.
func ResourcesTable(resources []setupresult.Resource) func() []Table {
	return func() []Table {
		t := Table{Header: []string{"kind", "name", "action", "detail"}}
		for _, r := range resources {
			t.Row(r.Kind, r.Name, r.Action, r.Detail)
		}
		return []Table{t}
	}
}
