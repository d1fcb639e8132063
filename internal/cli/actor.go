package cli

import (
	"os"
	"os/user"
)

// ciActors are the variables that name the person behind a CI job, by CI.
var ciActors = []struct{ env, ci string }{
	{"GITHUB_ACTOR", "GitHub Actions"},
	{"GITLAB_USER_LOGIN", "GitLab CI"},
	{"BUILD_USER_ID", "Jenkins"},
	{"CIRCLE_USERNAME", "CircleCI"},
	{"BITBUCKET_STEP_TRIGGERER_UUID", "Bitbucket Pipelines"},
}

// actor names who acts, for the records a person leaves (a pause, a test
// send, an opt-out): the person behind the CI job when the environment
// says, else user@host.
func actor(env Env) string {
	for _, a := range ciActors {
		if v := env.Getenv(a.env); v != "" {
			return v + " (" + a.ci + ")"
		}
	}
	name := env.Getenv("USER")
	if u, err := user.Current(); name == "" && err == nil {
		name = u.Username
	}
	if name == "" {
		name = "?"
	}
	host, _ := os.Hostname()
	return name + "@" + host
}
