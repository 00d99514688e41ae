package audit

import (
	"slices"
	"strings"
	"testing"
)

func TestMaskArgs(t *testing.T) {
	tests := []struct {
		name    string
		secrets []string
		args    []string
		want    []string
	}{
		{name: "nothing secret",
			args: []string{"jetctl", "consumer", "rewind", "ORDERS", "projector", "--to-seq", "5000", "--yes"},
			want: []string{"jetctl", "consumer", "rewind", "ORDERS", "projector", "--to-seq", "5000", "--yes"}},
		{name: "--password value",
			args: []string{"jetctl", "--password", "s3cret", "status"},
			want: []string{"jetctl", "--password", Mask, "status"}},
		{name: "--password=value",
			args: []string{"jetctl", "--password=s3cret", "status"},
			want: []string{"jetctl", "--password=" + Mask, "status"}},
		{name: "--token both forms",
			args: []string{"jetctl", "--token", "t0ken", "--token=t0ken2"},
			want: []string{"jetctl", "--token", Mask, "--token=" + Mask}},
		{name: "--nkey both forms",
			args: []string{"jetctl", "--nkey", "SUAXXX", "--nkey=/keys/u.nk"},
			want: []string{"jetctl", "--nkey", Mask, "--nkey=" + Mask}},
		{name: "a value that looks like a flag is still the value",
			args: []string{"jetctl", "--password", "--yes", "apply"},
			want: []string{"jetctl", "--password", Mask, "apply"}},
		{name: "--password last, without a value",
			args: []string{"jetctl", "status", "--password"},
			want: []string{"jetctl", "status", "--password"}},
		{name: "--user keeps the name, masks the password part",
			args: []string{"jetctl", "--user", "alice:pw", "--user=bob:p@ss:word", "--user", "carol"},
			want: []string{"jetctl", "--user", "alice:" + Mask, "--user=bob:" + Mask, "--user", "carol"}},
		{name: "URL userinfo, both flag forms",
			args: []string{"jetctl", "-s", "nats://alice:pw@host:4222", "--server=nats://tok3n@h1,nats://u:p@h2"},
			want: []string{"jetctl", "-s", "nats://alice:" + Mask + "@host:4222", "--server=nats://" + Mask + "@h1,nats://u:" + Mask + "@h2"}},
		{name: "URL of another flag and a password holding @",
			args: []string{"jetctl", "replay", "S", "--to", "x", "--to-server", "tls://u:p@ss@remote:4222"},
			want: []string{"jetctl", "replay", "S", "--to", "x", "--to-server", "tls://u:" + Mask + "@remote:4222"}},
		{name: "short flag with the URL attached",
			args: []string{"jetctl", "-snats://u:pw@h", "status"},
			want: []string{"jetctl", "-snats://u:" + Mask + "@h", "status"}},
		{name: "env-style secrets",
			args: []string{"jetctl", "apply", "--var", "DB_PASSWORD=hunter2", "--var=API_KEY=k", "--var", "REPLICAS=3", "NATS_TOKEN=abc"},
			want: []string{"jetctl", "apply", "--var", "DB_PASSWORD=" + Mask, "--var=API_KEY=" + Mask, "--var", "REPLICAS=3", "NATS_TOKEN=" + Mask}},
		{name: "known secrets wherever they appear",
			secrets: []string{"hunter22", "ab"},
			args:    []string{"jetctl", "--jq", ".x == \"hunter22\"", "--stream", "ab"},
			want:    []string{"jetctl", "--jq", ".x == \"" + Mask + "\"", "--stream", "ab"}},
		{name: "after --, arguments only",
			args: []string{"jetctl", "plugin-x", "--", "--password", "nats://u:pw@h"},
			want: []string{"jetctl", "plugin-x", "--", "--password", "nats://u:" + Mask + "@h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.args)
			got := Masker{Secrets: tt.secrets}.Args(tt.args)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Args(%q)\n got %q\nwant %q", tt.args, got, tt.want)
			}
			if !slices.Equal(in, tt.args) {
				t.Errorf("Args changed its input: %q", tt.args)
			}
		})
	}
}

func TestMaskText(t *testing.T) {
	m := Masker{Secrets: []string{"s3cret"}}
	tests := map[string]string{
		"":                                "",
		"cannot connect to nats://u:pw@h": "cannot connect to nats://u:" + Mask + "@h",
		"password s3cret refused":         "password " + Mask + " refused",
		"republished 3 messages to a.b":   "republished 3 messages to a.b",
	}
	for in, want := range tests {
		if got := m.Text(in); got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every secret of the table above is gone, whatever form it took.
func TestMaskArgsLeavesNoSecret(t *testing.T) {
	args := []string{"jetctl", "--password", "pw-one", "--password=pw-two", "--token", "tok-three",
		"--user", "u:pw-four", "-s", "nats://u:pw-five@h", "--var", "X_SECRET=pw-six"}
	joined := strings.Join(Masker{}.Args(args), " ")
	for _, secret := range []string{"pw-one", "pw-two", "tok-three", "pw-four", "pw-five", "pw-six"} {
		if strings.Contains(joined, secret) {
			t.Errorf("%q left in %q", secret, joined)
		}
	}
}
