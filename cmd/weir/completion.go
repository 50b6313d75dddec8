package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// cmdCompletion prints a shell's completion script for weir: its commands,
// each command's flags (read from the command itself), the values of the
// flags that have a few, and the arguments each command takes.
func cmdCompletion(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("weir completion", stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `Usage: weir completion bash|zsh|fish

Prints the shell completion script for weir: commands, their flags, and
job files where a command takes one. To use it:

  bash:  source <(weir completion bash)        (in ~/.bashrc)
  zsh:   weir completion zsh > "${fpath[1]}/_weir"   (or source <(weir completion zsh))
  fish:  weir completion fish > ~/.config/fish/completions/weir.fish
`)
	}
	pos, code, ok := parseInterspersed(fs, args)
	if !ok {
		return code
	}
	if len(pos) != 1 {
		fs.Usage()
		return 2
	}
	cmds := completionCommands()
	switch pos[0] {
	case "bash":
		fmt.Fprint(stdout, bashCompletion(cmds))
	case "zsh":
		fmt.Fprint(stdout, zshCompletion(cmds))
	case "fish":
		fmt.Fprint(stdout, fishCompletion(cmds))
	default:
		fmt.Fprintf(stderr, "weir completion: unknown shell %q: want bash, zsh or fish\n", pos[0])
		return 2
	}
	return 0
}

// compCommand is a command as completion sees it.
type compCommand struct {
	name, about string
	flags       []compFlag
	args        argKind
}

// compFlag is a flag of a command.
type compFlag struct {
	name, about string
	takesValue  bool
	values      []string // the values it takes, when there are a few
	file, dir   bool     // it takes a file, or a directory
}

// argKind is what a command's arguments are.
type argKind int

const (
	noArgs argKind = iota
	jobFiles
	anyFiles
	words // the values of argWords
)

// argsOf says what each command's arguments are.
var argsOf = map[string]argKind{
	"run": jobFiles, "lint": jobFiles, "savepoint": jobFiles, "status": jobFiles, "reconcile": jobFiles,
	"lateness": anyFiles, "gen": words, "completion": words,
}

var argWords = map[string][]string{
	"gen":        {"steep", "orders", "nexmark", "ledger", "ledger-events", "ledger-checkouts"},
	"completion": {"bash", "zsh", "fish"},
}

// flagValues are the values of flags that take one of a few.
var flagValues = map[string][]string{
	"log-format":   {"text", "json"},
	"drop-state":   {"windows", "dedup", "join"},
	"log-level":    {"debug", "info", "warn", "error"},
	"format":       {"text", "json", "csv"},
	"input-format": {"jsonl", "csv", "parquet"},
}

// completionCommands reads every command's flags from the command itself.
func completionCommands() []compCommand {
	var out []compCommand
	for _, c := range commands {
		cc := compCommand{name: c.name, about: firstLine(c.about), args: argsOf[c.name]}
		if fs := flagsOf(c); fs != nil {
			fs.VisitAll(func(f *flag.Flag) {
				if f.Name == "child" {
					return // weir bench's own, internal
				}
				kind, usage := flag.UnquoteUsage(f)
				cf := compFlag{name: f.Name, about: firstLine(usage), values: flagValues[f.Name]}
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
					cf.takesValue = true
				}
				switch strings.ToLower(kind) {
				case "file", "files", "file.json", "file.svg|.png":
					cf.file = true
				case "directory":
					cf.dir = true
				}
				cc.flags = append(cc.flags, cf)
			})
		}
		out = append(out, cc)
	}
	return out
}

func firstLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if i := strings.Index(s, " ("); i > 0 {
		s = s[:i]
	}
	if i := strings.Index(s, ": "); i > 0 && i < 60 {
		s = s[:i]
	}
	if len(s) > 70 {
		s = s[:70]
		if i := strings.LastIndexByte(s, ' '); i > 30 {
			s = s[:i]
		}
	}
	return strings.TrimSpace(s)
}

func bashCompletion(cmds []compCommand) string {
	var b strings.Builder
	b.WriteString("# bash completion for weir: source <(weir completion bash)\n_weir() {\n")
	b.WriteString("    local cur prev cmd\n    cur=\"${COMP_WORDS[COMP_CWORD]}\"\n    prev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n")
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.name
	}
	fmt.Fprintf(&b, "    if [[ $COMP_CWORD -eq 1 ]]; then\n        COMPREPLY=($(compgen -W %q -- \"$cur\"))\n        return\n    fi\n", strings.Join(names, " "))
	b.WriteString("    cmd=\"${COMP_WORDS[1]}\"\n    case \"$cmd $prev\" in\n")
	for _, c := range cmds {
		for _, f := range c.flags {
			if !f.takesValue {
				continue
			}
			pat := fmt.Sprintf("\"%s -%s\"|\"%s --%s\"", c.name, f.name, c.name, f.name)
			switch {
			case len(f.values) > 0:
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -W %q -- \"$cur\")); return;;\n", pat, strings.Join(f.values, " "))
			case f.dir:
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -d -- \"$cur\")); return;;\n", pat)
			case f.file:
				fmt.Fprintf(&b, "    %s) COMPREPLY=($(compgen -f -- \"$cur\")); return;;\n", pat)
			default:
				fmt.Fprintf(&b, "    %s) COMPREPLY=(); return;;\n", pat)
			}
		}
	}
	b.WriteString("    esac\n    if [[ \"$cur\" == -* ]]; then\n        case \"$cmd\" in\n")
	for _, c := range cmds {
		if len(c.flags) == 0 {
			continue
		}
		var fl []string
		for _, f := range c.flags {
			fl = append(fl, "--"+f.name)
		}
		sort.Strings(fl)
		fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\"));;\n", c.name, strings.Join(fl, " "))
	}
	b.WriteString("        esac\n        return\n    fi\n    case \"$cmd\" in\n")
	for _, c := range cmds {
		switch c.args {
		case jobFiles:
			fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -d -- \"$cur\") $(compgen -f -X '!*.y*ml' -- \"$cur\"));;\n", c.name)
		case anyFiles:
			fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -f -- \"$cur\"));;\n", c.name)
		case words:
			fmt.Fprintf(&b, "        %s) COMPREPLY=($(compgen -W %q -- \"$cur\"));;\n", c.name, strings.Join(argWords[c.name], " "))
		}
	}
	b.WriteString("    esac\n}\ncomplete -o filenames -F _weir weir\n")
	return b.String()
}

// zshQuote escapes a description for zsh's _arguments and _describe.
func zshQuote(s string) string {
	return strings.NewReplacer("'", "'\\''", "[", "\\[", "]", "\\]", ":", "\\:").Replace(s)
}

func zshCompletion(cmds []compCommand) string {
	var b strings.Builder
	b.WriteString("#compdef weir\n# zsh completion for weir: weir completion zsh > \"${fpath[1]}/_weir\", or source <(weir completion zsh)\n_weir() {\n    local -a commands\n    commands=(\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "        '%s:%s'\n", c.name, zshQuote(c.about))
	}
	b.WriteString("    )\n    if (( CURRENT == 2 )); then\n        _describe -t commands 'weir command' commands\n        return\n    fi\n")
	b.WriteString("    local cmd=$words[2]\n    shift words\n    (( CURRENT-- ))\n    case $cmd in\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "    %s)\n        _arguments -s", c.name)
		for _, f := range c.flags {
			spec := fmt.Sprintf("--%s[%s]", f.name, zshQuote(f.about))
			if f.takesValue {
				switch {
				case len(f.values) > 0:
					spec += ":" + f.name + ":(" + strings.Join(f.values, " ") + ")"
				case f.dir:
					spec += ":directory:_files -/"
				case f.file:
					spec += ":file:_files"
				default:
					spec += ":" + f.name + ": "
				}
			}
			fmt.Fprintf(&b, " \\\n            '%s'", spec)
		}
		switch c.args {
		case jobFiles:
			b.WriteString(" \\\n            '*:job file:_files -g \"*.(yaml|yml)\"'")
		case anyFiles:
			b.WriteString(" \\\n            '*:file:_files'")
		case words:
			fmt.Fprintf(&b, " \\\n            '1:%s:(%s)'", c.name, strings.Join(argWords[c.name], " "))
		}
		b.WriteString("\n        ;;\n")
	}
	b.WriteString("    esac\n}\nif [[ \"${funcstack[1]}\" == _weir ]]; then\n    _weir \"$@\"\nelse\n    compdef _weir weir\nfi\n")
	return b.String()
}

// fishQuote quotes a word for fish.
func fishQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", `\'`) + "'"
}

func fishCompletion(cmds []compCommand) string {
	var b strings.Builder
	b.WriteString("# fish completion for weir: weir completion fish > ~/.config/fish/completions/weir.fish\ncomplete -c weir -f\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "complete -c weir -n __fish_use_subcommand -a %s -d %s\n", c.name, fishQuote(c.about))
	}
	for _, c := range cmds {
		cond := fmt.Sprintf("'__fish_seen_subcommand_from %s'", c.name)
		for _, f := range c.flags {
			line := fmt.Sprintf("complete -c weir -n %s -l %s -d %s", cond, f.name, fishQuote(f.about))
			if f.takesValue {
				switch {
				case len(f.values) > 0:
					line += " -x -a " + fishQuote(strings.Join(f.values, " "))
				case f.file || f.dir:
					line += " -r -F"
				default:
					line += " -x"
				}
			}
			b.WriteString(line + "\n")
		}
		switch c.args {
		case jobFiles:
			fmt.Fprintf(&b, "complete -c weir -n %s -k -a '(__fish_complete_suffix .yaml; __fish_complete_suffix .yml)'\n", cond)
		case anyFiles:
			fmt.Fprintf(&b, "complete -c weir -n %s -F\n", cond)
		case words:
			fmt.Fprintf(&b, "complete -c weir -n %s -a %s\n", cond, fishQuote(strings.Join(argWords[c.name], " ")))
		}
	}
	return b.String()
}
