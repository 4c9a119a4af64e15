import pytest
from django.contrib.messages import get_messages


@pytest.fixture
def admin_client(client, django_user_model):
    """Django's test client logged in as a superuser."""
    user = django_user_model.objects.create_superuser("ops", "ops@example.com", "pw-for-tests")
    client.force_login(user)
    return client


def messages_of(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


@pytest.fixture
def project(db):
    from tests.factories import ProjectFactory

    return ProjectFactory(base_url="http://127.0.0.1:1/")
