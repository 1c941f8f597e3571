package permissions

import (
	"encoding/json"
	"fmt"
)

// AWSPolicy is an IAM identity-based policy allowing the grants' actions
// (the policy language's JSON: Version 2012-10-17, one Allow statement on
// every resource, as the load balancers, security groups and routes the
// manager makes are not known in advance; a grant with a Scope gets its
// own statement, whose Resource the scope names, "*" here).
func AWSPolicy(grants []Grant) ([]byte, error) {
	type statement struct {
		Sid      string   `json:"Sid"`
		Effect   string   `json:"Effect"`
		Action   []string `json:"Action"`
		Resource string   `json:"Resource"`
	}
	main := statement{Sid: "MulticloudCCM", Effect: "Allow", Resource: "*"}
	var scoped []statement
	for _, g := range grants {
		if g.Scope != "" {
			scoped = append(scoped, statement{Sid: fmt.Sprintf("Scoped%d", len(scoped)+1), Effect: "Allow", Action: []string{g.Permission}, Resource: "*"})
			continue
		}
		main.Action = append(main.Action, g.Permission)
	}
	doc := struct {
		Version   string      `json:"Version"`
		Statement []statement `json:"Statement"`
	}{Version: "2012-10-17"}
	if len(main.Action) > 0 {
		doc.Statement = append(doc.Statement, main)
	}
	doc.Statement = append(doc.Statement, scoped...)
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
