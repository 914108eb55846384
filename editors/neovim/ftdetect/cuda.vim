" .cu and .cuh are CUDA. Neovim's runtime knows this already; `setfiletype` keeps whatever a
" runtime or another plugin decided and fills in only where nothing did.
autocmd BufNewFile,BufRead *.cu,*.cuh setfiletype cuda
