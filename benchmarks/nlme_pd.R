# Fit the engine's PD models with R's nlme, for benchmarks/bench_pd.py.
#
#   Rscript benchmarks/nlme_pd.R DIRECTORY
#
# DIRECTORY holds what bench_pd.py wrote: pd_fits.csv (one row per fit: name, shape, the
# engine's estimates as starting values, repeats) and <name>.csv (id, time since the first
# dose, dv). The model is the engine's: dv = (b0 + b_i) * h(t), b_i ~ N(0, omega^2), additive
# residual error, maximum likelihood. The script writes nlme_pd_results.csv: per fit the
# median elapsed and CPU seconds, -2 log-likelihood less N log(2 pi) (the engine's OFV) and
# the estimates, or nlme's error where it stops without an optimum.
suppressPackageStartupMessages(library(nlme))

args <- commandArgs(trailingOnly = TRUE)
directory <- args[[1]]
fits <- read.csv(file.path(directory, "pd_fits.csv"), stringsAsFactors = FALSE)

formulas <- list(
  slope = dv ~ b0 * (1 + s * time),
  plateau = dv ~ b0 * (1 + p * (1 - exp(-exp(lk) * time))),
  transient = dv ~ b0 * (1 + p * (1 - exp(-exp(lk) * time)) * exp(-exp(lr) * time)),
  nadir = dv ~ b0 * (1 + d * time / exp(lt) * exp(1 - time / exp(lt)))
)
parameters <- list(slope = c("s"), plateau = c("p", "lk"), transient = c("p", "lk", "lr"),
                   nadir = c("d", "lt"))

rows <- list()
for (i in seq_len(nrow(fits))) {
  fit_row <- fits[i, ]
  data <- read.csv(file.path(directory, paste0(fit_row$name, ".csv")))
  data <- groupedData(dv ~ time | id, data = data)
  shape <- fit_row$shape
  start <- c(b0 = fit_row$baseline, unlist(fit_row[parameters[[shape]]]))
  fixed <- as.formula(paste(paste(c("b0", parameters[[shape]]), collapse = " + "), "~ 1"))
  run <- function() {
    nlme(formulas[[shape]], data = data, fixed = fixed, random = b0 ~ 1,
         start = start, method = "ML",
         control = nlmeControl(maxIter = 200, msMaxIter = 200, pnlsMaxIter = 50))
  }
  model <- tryCatch(run(), error = function(e) conditionMessage(e))
  if (is.character(model)) {
    rows[[i]] <- data.frame(name = fit_row$name, seconds = NA, cpu_seconds = NA, ofv = NA,
                            baseline = NA, baseline_sd = NA, residual = NA, error = model)
    next
  }
  elapsed <- numeric(fit_row$repeats)
  cpu <- numeric(fit_row$repeats)
  for (r in seq_len(fit_row$repeats)) {
    timing <- system.time(run())
    elapsed[r] <- timing[["elapsed"]]
    cpu[r] <- timing[["user.self"]] + timing[["sys.self"]]
  }
  n <- nrow(data)
  estimates <- fixef(model)
  rows[[i]] <- data.frame(
    name = fit_row$name,
    seconds = median(elapsed),
    cpu_seconds = median(cpu),
    ofv = -2 * as.numeric(logLik(model)) - n * log(2 * pi),
    baseline = estimates[["b0"]],
    baseline_sd = as.numeric(VarCorr(model)[1, "StdDev"]),
    residual = model$sigma,
    error = ""
  )
}
write.csv(do.call(rbind, rows), file.path(directory, "nlme_pd_results.csv"), row.names = FALSE)
