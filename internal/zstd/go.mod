module github.com/DataDog/zstd

go 1.25

require github.com/klauspost/compress v1.20.3
