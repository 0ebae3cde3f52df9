# Fit the engine's population PK models with R's nlme, for benchmarks/bench_nlme.py.
#
#   Rscript benchmarks/nlme_fits.R DIRECTORY
#
# DIRECTORY holds what bench_nlme.py wrote: studies.csv (one row per fit: study, model,
# log_dv, repeats), and per study <study>_obs.csv (row, id, time, dv), <study>_pairs.csv
# (row, amount, elapsed, duration: each dose reaching each observation) and <study>_starts.csv
# (starting log typical values, one row per start). The script writes nlme_results.csv: one
# row per fit and start with the median elapsed and CPU seconds over the repeats, whether nlme
# converged, -2 log-likelihood less N log(2 pi) (the engine's OFV), and the estimates with
# their standard errors (fixed effects: summary's t-table; SDs: the log-scale intervals).
#
# The models are closed forms (superposition of each dose's response), maximum likelihood,
# diagonal random effects on every log parameter, additive residual error: the same models
# the engine fits. A study whose weight_on column names log parameters ("lcl lv") also has
# those parameters scale as a power of weight over 70 kg: the obs file's column lwt holds
# log(weight / 70), and the exponents are reported as <parameter>_wt_est and _se. A study
# whose random_on column names log parameters ("lcl lv") has random effects on those only.
# A study whose block column names two log parameters ("lcl lv") has their random effects
# correlated (pdBlocked: pdSymm for the pair, pdDiag for the rest), the correlation reported
# as corr_est.
suppressPackageStartupMessages(library(nlme))

args <- commandArgs(trailingOnly = TRUE)
directory <- args[[1]]
studies <- read.csv(file.path(directory, "studies.csv"), stringsAsFactors = FALSE)

# Per-unit-dose response of each (dose, observation) pair; parameters already per pair.
unit_response <- function(model, cl, v, q, vp, ka, t, duration) {
  if (model == "oral1") {
    k <- cl / v
    return(ka / (v * (ka - k)) * (exp(-k * t) - exp(-ka * t)))
  }
  if (model == "iv1") {
    coef <- list(1 / v)
    rate <- list(cl / v)
  } else {
    k10 <- cl / v; k12 <- q / v; k21 <- q / vp
    total <- k10 + k12 + k21
    alpha <- (total + sqrt(total^2 - 4 * k10 * k21)) / 2
    beta <- k10 * k21 / alpha
    coef <- list((alpha - k21) / (v * (alpha - beta)), (k21 - beta) / (v * (alpha - beta)))
    rate <- list(alpha, beta)
  }
  infused <- duration > 0
  tau <- ifelse(infused, duration, 1)
  out <- 0
  for (m in seq_along(coef)) {
    bolus <- coef[[m]] * exp(-rate[[m]] * t)
    infusion <- coef[[m]] / (rate[[m]] * tau) *
      (exp(-rate[[m]] * pmax(t - tau, 0)) - exp(-rate[[m]] * t))
    out <- out + ifelse(infused, infusion, bolus)
  }
  out
}

# nlme sorts the data by group: the pairs are matched to the rows it passes.
predict_rows <- function(pairs, model, row, cl, v, q = NULL, vp = NULL, ka = NULL) {
  at <- match(pairs$row, row)
  use <- !is.na(at)
  at <- at[use]
  p <- pairs[use, ]
  pick <- function(x) if (is.null(x)) NULL else x[at]
  response <- p$amount * unit_response(
    model, pick(cl), pick(v), pick(q), pick(vp), pick(ka), p$elapsed, p$duration
  )
  out <- numeric(length(row))
  sums <- rowsum(response, at)
  out[as.integer(rownames(sums))] <- sums
  out
}

fit_one <- function(spec, obs, pairs, start) {
  model <- spec$model
  parameters <- switch(model, oral1 = c("lcl", "lv", "lka"), iv1 = c("lcl", "lv"),
                       iv2 = c("lcl", "lv", "lq", "lvp"))
  concentration <- switch(
    model,
    oral1 = function(lcl, lv, lka, row) {
      predict_rows(pairs, model, row, exp(lcl), exp(lv), ka = exp(lka))
    },
    iv1 = function(lcl, lv, row) predict_rows(pairs, model, row, exp(lcl), exp(lv)),
    iv2 = function(lcl, lv, lq, lvp, row) {
      predict_rows(pairs, model, row, exp(lcl), exp(lv), exp(lq), exp(lvp))
    }
  )
  call <- paste0("concentration(", paste(c(parameters, "row"), collapse = ", "), ")")
  if (spec$log_dv) call <- paste0("log(", call, ")")
  formula <- as.formula(paste("dv ~", call))
  effects <- as.formula(paste(paste(parameters, collapse = " + "), "~ 1"))
  # random_on names the log parameters with a random effect (default: every one).
  random_on <- if (is.null(spec$random_on) || is.na(spec$random_on) || spec$random_on == "")
    parameters else strsplit(spec$random_on, " ")[[1]]
  random <- pdDiag(as.formula(paste(paste(random_on, collapse = " + "), "~ 1")))
  block <- if (is.null(spec$block) || is.na(spec$block) || spec$block == "") character(0) else
    strsplit(spec$block, " ")[[1]]
  if (length(block) == 2) {
    rest <- setdiff(random_on, block)
    random <- pdBlocked(list(
      pdSymm(as.formula(paste(paste(block, collapse = " + "), "~ 1"))),
      pdDiag(as.formula(paste(paste(rest, collapse = " + "), "~ 1")))
    ))
  }
  weight_on <- if (is.null(spec$weight_on) || is.na(spec$weight_on)) character(0) else
    strsplit(spec$weight_on, " ")[[1]]
  starting <- unlist(start[parameters])
  if (length(weight_on) > 0) {
    # One formula per parameter (nlme's order of coefficients): intercept, then the exponent.
    effects <- lapply(parameters, function(name) {
      as.formula(paste(name, if (name %in% weight_on) "~ lwt" else "~ 1"))
    })
    starting <- unlist(lapply(parameters, function(name) {
      if (name %in% weight_on) c(start[[name]], 0) else start[[name]]
    }))
  }
  data <- groupedData(dv ~ time | id, data = obs)
  # nlme looks the model function up from the global environment.
  assign("concentration", concentration, envir = globalenv())
  run <- function() {
    nlme(formula, data = data, fixed = effects, random = random,
         start = starting, method = "ML",
         control = nlmeControl(maxIter = 200, pnlsMaxIter = 20, msMaxIter = 200,
                               returnObject = TRUE))
  }
  converged <- TRUE
  seconds <- cpu <- numeric(0)
  for (r in seq_len(spec$repeats)) {
    timing <- system.time(fit <- tryCatch(
      withCallingHandlers(run(), warning = function(w) {
        converged <<- FALSE
        invokeRestart("muffleWarning")
      }),
      error = function(e) {
        message(spec$study, ", start ", paste(round(unlist(start), 2), collapse = " "), ": ",
                conditionMessage(e))
        NULL
      }
    ))
    if (is.null(fit)) return(data.frame(converged = FALSE, seconds = NA, cpu = NA, ofv = NA))
    seconds <- c(seconds, timing[["elapsed"]])
    cpu <- c(cpu, timing[["user.self"]] + timing[["sys.self"]])
  }
  seconds <- median(seconds)
  cpu <- median(cpu)
  fixed <- summary(fit)$tTable
  sds <- sqrt(diag(as.matrix(pdMatrix(fit$modelStruct$reStruct)[[1]]))) * fit$sigma
  row <- data.frame(
    converged = converged, seconds = seconds, cpu = cpu,
    ofv = -2 * as.numeric(logLik(fit)) - nrow(obs) * log(2 * pi)
  )
  for (name in weight_on) {
    row[[paste0(name, "_wt_est")]] <- fixed[paste0(name, ".lwt"), "Value"]
    row[[paste0(name, "_wt_se")]] <- fixed[paste0(name, ".lwt"), "Std.Error"]
  }
  for (name in parameters) {
    key <- if (name %in% weight_on) paste0(name, ".(Intercept)") else name
    row[[paste0(name, "_est")]] <- fixed[key, "Value"]
    row[[paste0(name, "_se")]] <- fixed[key, "Std.Error"]
    row[[paste0("sd_", name, "_est")]] <- unname(sds[name])
  }
  row$sigma_est <- fit$sigma
  if (length(block) == 2) {
    covariance <- as.matrix(pdMatrix(fit$modelStruct$reStruct)[[1]])
    row$corr_est <- cov2cor(covariance)[block[1], block[2]]
  }
  # intervals() gives the SDs' limits from a normal approximation on the log scale.
  limits <- tryCatch(intervals(fit, which = "var-cov"), error = function(e) NULL)
  for (name in parameters) {
    row[[paste0("sd_", name, "_logse")]] <- if (is.null(limits)) NA else {
      bounds <- limits$reStruct$id[paste0("sd(", name, ")"), c("lower", "upper")]
      log(bounds[["upper"]] / bounds[["lower"]]) / (2 * qnorm(0.975))
    }
  }
  row$sigma_logse <- if (is.null(limits)) NA else {
    log(limits$sigma[["upper"]] / limits$sigma[["lower"]]) / (2 * qnorm(0.975))
  }
  row
}

results <- list()
for (i in seq_len(nrow(studies))) {
  spec <- studies[i, ]
  read <- function(part) read.csv(file.path(directory, paste0(spec$study, "_", part, ".csv")))
  obs <- read("obs")
  pairs <- read("pairs")
  starts <- read("starts")
  for (s in seq_len(nrow(starts))) {
    row <- fit_one(spec, obs, pairs, starts[s, ])
    results[[length(results) + 1]] <- cbind(
      data.frame(study = spec$study, start = s), row
    )
  }
}
all_columns <- unique(unlist(lapply(results, names)))
results <- do.call(rbind, lapply(results, function(r) {
  r[setdiff(all_columns, names(r))] <- NA
  r[all_columns]
}))
write.csv(results, file.path(directory, "nlme_results.csv"), row.names = FALSE)
