package jsapi

import (
	"context"
	"encoding/json"
)

// Request sends req, as JSON, to the API subject (without the prefix) and
// decodes the reply into resp, riding out a leader election as MsgGet
// does. An API error in the reply is left in resp for the caller, which
// knows what its codes mean.
func (c *Client) Request(ctx context.Context, subject string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	reply, err := c.requestRaw(ctx, subject, body)
	if err != nil {
		return err
	}
	return json.Unmarshal(reply.Data, resp)
}
