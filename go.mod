module github.com/weirstream/weir

go 1.26.8

require (
	github.com/expr-lang/expr v1.17.8
	github.com/valyala/fastjson v1.6.10
	go.yaml.in/yaml/v3 v3.0.6
	golang.org/x/term v0.48.0
)

require golang.org/x/sys v0.50.0 // indirect
