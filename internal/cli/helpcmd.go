package cli

import "github.com/spf13/cobra"

// newHelpCmd is `smsform help [COMMAND]`: the same text as COMMAND --help,
// on stdout. Cobra's own prints the general usage with exit 0 for a command
// that does not exist; this one refuses it as a mistyped command would be,
// with a suggestion and exit 1.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		RunE: func(_ *cobra.Command, args []string) error {
			target, rest, err := root.Find(args)
			if err != nil {
				return err
			}
			if len(rest) > 0 {
				return unknownCommand(target, rest)
			}
			target.InitDefaultHelpFlag()
			return target.Help()
		},
	}
}
