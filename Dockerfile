# syntax=docker/dockerfile:1
# The console image attaches to an existing PostgreSQL: DATABASE_URL is
# required (there is no embedded server in the image).
# Not built on the development machines (no Docker engine there): reviewed by eye.

FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/console ./cmd/console

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/console /usr/local/bin/console
USER nonroot:nonroot
EXPOSE 8080
ENV CONSOLE_ADDR=0.0.0.0:8080
# serve refuses to start without DATABASE_URL here rather than trying to
# start a PostgreSQL the image does not have.
ENV CONSOLE_REQUIRE_DATABASE_URL=1
# The image is served over TLS (--tls-cert/--tls-key, or a proxy that
# terminates TLS): cookies are Secure with the __Host- prefix.
ENV CONSOLE_SECURE_COOKIES=1
ENTRYPOINT ["/usr/local/bin/console"]
CMD ["serve"]
